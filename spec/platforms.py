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


NameRule = Literal["jobset", "raycluster"]
"""How a Kubernetes platform's controller bounds the job's name (``targets.kube_names``):
``jobset``: the longest pod name of the JobSet the Trainer makes from the runtime's replicated
jobs is an RFC 1035 label (the runtime decides; one only the cluster knows is read at
``plan``); ``raycluster``: KubeRay's RayCluster ``<name>-#####`` is at most 53 characters."""

Check = Literal["inputs", "packages", "disk", "placement", "objects", "access", "name-length",
                "crd-rules"]
"""What ftspec can find wrong before ``apply`` starts anything (at ``plan``; the CRD rules
at ``validate``): ``inputs`` (local files: model, tokenizer, dataset rows, resume folder),
``packages`` (the launcher is installed),
``disk`` (room for the checkpoints), ``placement`` (a node of the cluster fits the job),
``objects`` (namespace, runtime, Secrets and claims the job names exist), ``access`` (the
user may make the changes), ``name-length`` (the name the runtime read from the cluster
allows), ``crd-rules`` (the objects pass the CRDs' schema and CEL rules, ``validate`` with
``FTSPEC_CRD_DIR``)."""


@dataclass(frozen=True)
class Platform:
    """Where a job runs, as data: read wherever a choice depends on the platform, so no
    module asks "is this a Kubernetes target" by comparing names. A fifth platform is a
    row here, its compile target (``targets/<name>.py``) and its backend
    (``reconciler.backends.BACKENDS``); ``tests/targets/test_platform_rows.py`` fails when
    a part is missing."""

    target: str
    """The ``deploy.target`` value."""
    compile_target: str | None
    """The compile target ``apply`` needs; None: the launcher's own artifacts."""
    backend: str
    """The reconciler backend that applies it."""
    kubernetes: bool
    """Runs as Kubernetes objects: the namespace is part of the job's identity, secrets are
    Secret references, the objects meet their CRDs."""
    kinds: tuple[str, ...] = ()
    """The Kubernetes kinds ftspec creates for it (listed by label to find orphans), the
    job's own kind first."""
    name_rule: NameRule | None = None
    """How its controller bounds the job's name (Kubernetes platforms)."""
    preflight: tuple[Check, ...] = ()
    """What ``plan`` checks before anything starts."""

    @property
    def job_kind(self) -> str | None:
        """The kind that carries the job (TrainJob, RayJob); None off Kubernetes."""
        return self.kinds[0] if self.kinds else None


PLATFORMS: dict[str, Platform] = {p.target: p for p in (
    Platform("local", None, "local", kubernetes=False,
             preflight=("inputs", "packages", "disk")),
    Platform("kubeflow", "kubeflow", "kubernetes", kubernetes=True,
             kinds=("TrainJob", "TrainingRuntime", "ConfigMap"), name_rule="jobset",
             preflight=("objects", "access", "name-length", "crd-rules")),
    Platform("kuberay", "kuberay", "kubernetes", kubernetes=True,
             kinds=("RayJob", "ConfigMap"), name_rule="raycluster",
             preflight=("objects", "access", "crd-rules")),
    Platform("ray", "ray", "ray", kubernetes=False, preflight=("placement",)),
)}
assert tuple(PLATFORMS) == DEPLOY_TARGETS

KUBERNETES_PLATFORMS: tuple[str, ...] = tuple(t for t, p in PLATFORMS.items() if p.kubernetes)
"""The ``deploy.target`` values that run as Kubernetes objects."""


def on_kubernetes(target: str) -> bool:
    """Whether ``deploy.target`` ``target`` runs as Kubernetes objects."""
    platform = PLATFORMS.get(target)
    return platform is not None and platform.kubernetes


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
