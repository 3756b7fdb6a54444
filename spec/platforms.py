"""Where a job runs and what ftspec talks to there: each fact once.

The spec layer imports nothing of ours, so the names the spec model, the IR, the compiler's
dispatch, the targets and the reconciler share live here and are read everywhere: the
deploy targets with their compile target and backend, the launchers, the Kubeflow Trainer
API (its group/version and the generations ftspec renders for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

DeployTarget = Literal["local", "kubeflow", "kuberay", "ray"]
"""``deploy.target`` values."""
DEPLOY_TARGETS: tuple[str, ...] = get_args(DeployTarget)

Launcher = Literal["torchtune", "accelerate", "fms_hf_tuning"]
"""``launcher`` values; each is also a compile target (its own command and config), and a
module ``ftspec.targets.<name>`` whose ``TARGET`` implements ``targets.launcher.Launcher``."""
LAUNCHERS: tuple[str, ...] = get_args(Launcher)


@dataclass(frozen=True)
class LauncherFacts:
    """What the compiler and the backends need to know of a launcher, as data (the spec
    layer imports no target): read where a choice depends on the launcher, so no module
    outside the launcher's own compares its name."""

    name: str
    multi_rank_strategy: Literal["fsdp", "ddp"]
    """What ``distributed.strategy: auto`` resolves to over several ranks (torchtune's
    distributed recipes always shard with FSDP2)."""
    memory_profile: Literal["torchtune", "hf"]
    """Which training stack the memory estimate models: torchtune's recipes (adapters in the
    model dtype, the full-vocabulary logits) or the Hugging Face Trainer's (PEFT's fp32
    adapters, TRL's tiled logits)."""
    packages: tuple[str, ...]
    """Python packages a local run imports (the local preflight's probe)."""
    adapter_packages: tuple[str, ...]
    """More packages a LoRA/QLoRA run imports."""
    install: str
    """What to ``pip install`` for them."""
    cpu_multiprocess: bool
    """Several processes can train on CPU (gloo)."""
    accelerate_config: bool
    """Runs under ``accelerate launch`` with ftspec's accelerate config (its CPU settings)."""
    logs_tokens: bool
    """Its training log counts the tokens seen (else the local backend counts the dataset)."""
    drops_partial_batch: bool
    """Its data loader drops an epoch's last, partial micro batch and its loop steps the
    optimizer only after a full gradient accumulation (torchtune's recipes: ``drop_last=True``,
    ``len(dataloader) // gradient_accumulation_steps`` steps an epoch), so a dataset smaller
    than one global batch trains no step. The Hugging Face Trainer keeps the partial batch
    (``dataloader_drop_last`` is off) and steps on a partial accumulation."""


LAUNCHER_FACTS: dict[str, LauncherFacts] = {f.name: f for f in (
    LauncherFacts("torchtune", "fsdp", "torchtune", ("torch", "torchtune", "torchao"), (),
                  "ftspec[torchtune]", cpu_multiprocess=False, accelerate_config=False,
                  logs_tokens=False, drops_partial_batch=True),
    LauncherFacts("accelerate", "ddp", "hf",
                  ("torch", "accelerate", "transformers", "datasets", "trl"), ("peft",),
                  "ftspec[accelerate]", cpu_multiprocess=True, accelerate_config=True,
                  logs_tokens=True, drops_partial_batch=False),
    LauncherFacts("fms_hf_tuning", "ddp", "hf", ("torch", "accelerate", "tuning"), ("peft",),
                  "fms-hf-tuning", cpu_multiprocess=True, accelerate_config=True,
                  logs_tokens=True, drops_partial_batch=False),
)}
assert tuple(LAUNCHER_FACTS) == LAUNCHERS


@dataclass(frozen=True)
class Platform:
    target: str
    """The ``deploy.target`` value."""
    compile_target: str | None
    """The compile target ``apply`` needs; None: the launcher's own artifacts."""
    backend: str
    """The reconciler backend that applies it."""


PLATFORMS: dict[str, Platform] = {p.target: p for p in (
    Platform("local", None, "local"),
    Platform("kubeflow", "kubeflow", "kubernetes"),
    Platform("kuberay", "kuberay", "kubernetes"),
    Platform("ray", "ray", "ray"),
)}
assert tuple(PLATFORMS) == DEPLOY_TARGETS

COMPILE_TARGETS: tuple[str, ...] = LAUNCHERS + tuple(
    p.compile_target for p in PLATFORMS.values() if p.compile_target is not None)
"""``ftspec compile --target`` values = module names under ``ftspec.targets``."""

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_API_VERSION = "v1alpha1"
TRAINER_API = f"{TRAINER_GROUP}/{TRAINER_API_VERSION}"
"""apiVersion of TrainJob, TrainingRuntime and ClusterTrainingRuntime."""

TrainerVersion = Literal["v2.1", "v2.2", "v2.3"]
"""Kubeflow Trainer releases ftspec renders for, oldest first."""
TRAINER_VERSIONS: tuple[str, ...] = get_args(TrainerVersion)
NEWEST_TRAINER = TRAINER_VERSIONS[-1]
OVERRIDES_TRAINER = TRAINER_VERSIONS[0]
"""The last generation with ``podTemplateOverrides`` (v2.1)."""
PATCHES_TRAINER = TRAINER_VERSIONS[1]
"""The first generation with ``runtimePatches`` (v2.2); later ones render the same way."""
