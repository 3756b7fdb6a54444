"""The torchtune runtimes of Kubeflow Trainer: trainer args in the SDK's form, and the
runtime's own admission rules checked before anything is submitted.

With ``trainer.command: [tune, run]`` the Trainer controller builds the command itself:
``tune run [--rdzv_endpoint=…] RECIPE --config CONFIG`` (recipe and config picked from
numNodes / numProcPerNode / the LoRA args), then ``spec.trainer.args``, then the four keys
the runtime owns. So the args are only ``key=value`` overrides: those of the torchtune
launcher, minus what the runtime decides (recipe, config, the runtime-owned paths) and with
the data location rewritten to where the dataset initializer puts it (``/workspace/dataset``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ftspec.spec.diagnostics import Diagnostic, Findings, Severity
from ftspec.spec.ir import Job
from ftspec.spec.model.method import LORA_FAMILY
from ftspec.spec.urls import hub_parts, scheme
from ftspec.targets import shell
from ftspec.targets.paths import DataSource, RunPaths
from ftspec.targets.torchtune_checks import METHODS

if TYPE_CHECKING:
    from ftspec.targets.torchtune_configs import Override

RUNTIME_OWNED: tuple[str, ...] = (
    "output_dir", "tokenizer.path", "tokenizer.merges_file", "checkpointer.checkpoint_dir",
)
"""Set by the torchtune runtime; the controller rejects a TrainJob whose args set them."""

DEFAULT_RUNTIMES: dict[str, str] = {
    "llama3_2-1b": "torchtune-llama3.2-1b",
    "llama3_2-3b": "torchtune-llama3.2-3b",
    "qwen2_5-1.5b": "torchtune-qwen2.5-1.5b",
}
"""Upstream torchtune ClusterTrainingRuntimes, by model family."""

RUNTIME_MODELS: dict[str, str] = {
    "torchtune-llama3.2-1b": "llama3_2-1b",
    "torchtune-llama3.2-3b": "llama3_2-3b",
    "torchtune-qwen2.5-1.5b": "qwen2_5-1.5b",
    "torchtune-llama3.3-70b": "llama3_3-70b",
}
"""Model the controller derives from a torchtune runtime's name."""

MULTI_NODE_MODELS = frozenset({"llama3_3-70b"})
DATASET_ROOT = "/workspace/dataset"
LOCATION_KEYS: tuple[str, ...] = (
    "dataset.source", "dataset.data_files", "dataset.data_dir", "dataset.path",
    "dataset.delimiter",
)
"""Data location keys the kubeflow target rewrites for the dataset initializer."""
SDK_ORDER: tuple[str, ...] = (
    "dtype", "batch_size", "epochs", "loss", "dataset.data_files", "dataset.data_dir",
    "model.apply_lora_to_mlp", "model.apply_lora_to_output", "model.lora_rank",
    "model.lora_alpha", "model.lora_dropout", "model.quantize_base", "model.use_dora",
    "model.lora_attn_modules", "dataset", "dataset.source", "dataset.split",
    "dataset.train_on_input", "dataset.new_system_prompt", "dataset.column_map",
)
"""The order the Kubeflow SDK writes TorchTuneConfig args in; other keys follow."""
LORA_KINDS = LORA_FAMILY & METHODS
"""The LoRA methods torchtune trains."""


def is_torchtune_runtime(name: str) -> bool:
    return name.startswith("torchtune-")


KUBEFLOW_PATHS = RunPaths(
    model_dir="/workspace/model", model_id="/workspace/model", tokenizer=None,
    special_tokens=None, train=DataSource(files=DATASET_ROOT), output_dir="/workspace/output",
)
"""Where the torchtune runtimes put things: the initializers download into /workspace."""
SHORTHAND_COMPONENTS = ("dataset", "loss")
"""Components every torchtune base config has, written ``dataset=X`` as the SDK does."""


def launcher_overrides(job: Job) -> list[Override]:
    """The torchtune launcher's overrides for the Kubeflow paths, typed (a ``Set`` keeps its
    value, rendered only when the args are written).

    A whole component set at once (a raw ``overrides.torchtune`` mapping) is written key by
    key: on the command line ``tune run`` reads ``dataset={...}`` as the component's name
    (``dataset._component_``), so the mapping's keys are set one by one and the base's other
    keys removed."""
    from ftspec.targets.torchtune import plan_run
    from ftspec.targets.torchtune_configs import Remove, Set, load_config

    run = plan_run(job, KUBEFLOW_PATHS)
    base: dict[str, Any] | None = None
    out: list[Override] = []
    for op in run.overrides:
        if isinstance(op, Set) and isinstance(op.value, dict) and "." not in op.key:
            base = base if base is not None else load_config(run.config)
            old = base.get(op.key)
            out += [Remove(f"{op.key}.{k}") for k in (old if isinstance(old, dict) else {})
                    if k != "_component_" and k not in op.value]
            out += [Set(f"{op.key}.{k}", v) for k, v in op.value.items()]
            continue
        out.append(op)
    return out


def _dataset_location(job: Job) -> list[Override]:
    """Where the dataset initializer downloaded ``data.train.uri``, as torchtune's dataset
    arguments: ``hf://owner/repo/<rel>`` lies at ``/workspace/dataset/<rel>``. A file is read
    by the loader its name implies (or ``data.train.loader``); a repository or folder is
    the local snapshot ``datasets`` reads as the Hub would (its files and card configs)."""
    from ftspec.targets.torchtune import dataset_location
    from ftspec.targets.torchtune_configs import Set

    train = job.spec.data.train
    if train is None:
        return []
    rel = hub_parts(train.uri)[1] if scheme(train.uri) == "hf" else ""
    path = f"{DATASET_ROOT}/{rel}" if rel else DATASET_ROOT
    found = dataset_location(f"file://{path}", train.loader, path)
    return [Set(f"dataset.{key}", value) for key, value in found.items()]


def _kept(key: str) -> bool:
    return key not in RUNTIME_OWNED and key not in LOCATION_KEYS and key != "model._component_"


def trainer_args(job: Job) -> list[str]:
    """``spec.trainer.args`` for a torchtune runtime, in the SDK's order: the typed
    overrides, each rendered once as ``key=value`` (``~key`` for a removal)."""
    from ftspec.targets.torchtune_configs import Remove, Set

    user = job.spec.overrides.torchtune
    items: dict[str, Override] = {}
    for op in launcher_overrides(job):
        if not _kept(op.key):
            continue
        if isinstance(op, Remove):
            items[f"~{op.key}"] = op
            continue
        component = op.key.removesuffix("._component_")
        shorthand = component in SHORTHAND_COMPONENTS
        items[component if shorthand else op.key] = Set(component, op.value) if shorthand else op
    for op in _dataset_location(job):
        items[op.key] = Set(op.key, user[op.key]) if op.key in user else op
    kind = job.spec.method.kind
    if kind in LORA_KINDS:
        # The controller picks the LoRA/QLoRA recipe and config from these args.
        items["model.quantize_base"] = Set("model.quantize_base", kind == "qlora")
        items["model.use_dora"] = Set("model.use_dora", kind == "dora")
    rank = {key: i for i, key in enumerate(SDK_ORDER)}
    ordered = sorted(enumerate(items.items()),
                     key=lambda e: (rank.get(e[1][0], len(rank)), e[0]))
    return [shell.kube_literal(op.cli()) for _, (_, op) in ordered]


_error = Findings("kubeflow").error


def runtime_rules(job: Job, runtime: str) -> Iterator[Diagnostic]:
    """What the Trainer's torchtune plugin would reject at admission, found now."""
    spec = job.spec
    model = RUNTIME_MODELS.get(runtime)
    if model is None:
        yield Diagnostic(
            Severity.WARNING,
            f'"{runtime}" is not an upstream torchtune runtime; the controller derives the '
            "model from the name torchtune-<model>-<size> and may reject it",
            path=("deploy", "kubeflow", "runtime", "name"), code="kubeflow.runtime-unknown")
    elif spec.model.family != model:
        yield _error(("model", "family"),
                     f"runtime {runtime} trains {model}, not {spec.model.family or 'a custom model'}",
                     "runtime-model",
                     hint=f"use model.family: {model}, or the runtime for your model")
    lora = spec.method.kind in LORA_KINDS
    if job.nodes > 1:
        if lora:
            yield _error(("resources", "nodes"),
                         "LoRA fine-tuning is not supported for multi-node training in "
                         f"TorchTune (nodes is {job.nodes})", "lora-nodes",
                         hint="set resources.nodes: 1, or method.kind: full")
        elif model is not None and model not in MULTI_NODE_MODELS:
            yield _error(("resources", "nodes"),
                         f"the torchtune runtime trains {model} on one node only "
                         f"(nodes is {job.nodes})", "runtime-nodes", hint="set resources.nodes: 1")
    if spec.method.kind == "qlora":
        if model == "qwen2_5-1.5b":
            yield _error(("method", "kind"), "the torchtune runtime has no QLoRA for Qwen2.5 "
                         "1.5B", "qlora-model", hint="use method.kind: lora")
        elif model is not None and job.procs_per_node > 1:
            yield _error(("resources", "gpus_per_node"),
                         "the torchtune runtime runs QLoRA on a single device "
                         f"({job.procs_per_node} processes per node)", "qlora-devices",
                         hint="set resources.gpus_per_node: 1")
    if job.gpus_per_node and job.procs_per_node != job.gpus_per_node:
        yield _error(("resources", "processes_per_node"),
                     f"the torchtune runtime launches one process per GPU: "
                     f"{job.gpus_per_node} GPUs per node, {job.procs_per_node} processes (the "
                     "controller would wrap ftspec's recipe choice in a launch of another size, "
                     "which torchtune refuses in the pod)", "procs-per-node",
                     hint="remove processes_per_node, or set it to gpus_per_node")
    if (spec.training.checkpointing.resume_from is not None and lora and job.nodes == 1
            and job.procs_per_node == 1):
        yield _error(("training", "checkpointing", "resume_from"), "the torchtune runtime runs "
                     "torchtune 0.6.1's single-device LoRA recipe as shipped, which resumes "
                     "without its step count: the schedule would start again at warm-up "
                     "(ftspec runs its resume elsewhere: targets/torchtune_resume.py)",
                     "resume-single-device", hint="resume on two or more GPUs (the "
                     "distributed LoRA recipe restores the step), or use deploy.target: local "
                     "or ray, or launcher: accelerate")
    yield from _owned_keys(job, runtime)
    yield from _locations(job)
    yield from _command_line(job)


SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "dataset.new_system_prompt": ("data", "train", "new_system_prompt"),
    "dataset.column_map": ("data", "train", "column_map"),
    "dataset.split": ("data", "train", "split"),
    "dataset.name": ("data", "train", "subset"),
    "dataset.column": ("data", "train", "text_field"),
    "dataset.conversation_column": ("data", "train", "conversation_column"),
}
"""torchtune keys whose value is spec text -> the spec field it comes from."""


def _spec_text_values(job: Job) -> Iterator[tuple[str, Any]]:
    """(torchtune key, value) of every override whose value comes from spec text: the
    dataset and metric-logger components (built from the Job alone) and the raw
    ``overrides.torchtune``. No base config is read, so ``validate`` runs this without
    torchtune installed."""
    from ftspec.targets.torchtune import _dataset, metric_logger

    for prefix, component in (("dataset", _dataset(job, KUBEFLOW_PATHS)),
                              ("metric_logger", metric_logger(job))):
        for key, value in component.items():
            yield f"{prefix}.{key}", value
    yield from job.spec.overrides.torchtune.items()


def _command_line(job: Job) -> Iterator[Diagnostic]:
    """Values the TrainJob's ``key=value`` args cannot carry (the runtime owns the config
    file, so there is no other way in)."""
    from ftspec.targets.torchtune import DATASETS, base_config
    from ftspec.targets.torchtune_configs import cli_problem

    train = job.spec.data.train
    if base_config(job) is None or train is None or train.format not in DATASETS:
        return  # the torchtune and data checks report these (no dataset component to build)
    for key, value in _spec_text_values(job):
        problem = cli_problem(value)
        if problem is None:
            continue
        user = job.spec.overrides.torchtune
        path = ("overrides", "torchtune", key) if key in user \
            else SPEC_PATHS.get(key, ("data", "train"))
        yield _error(path, f"{key} cannot be passed to the torchtune runtime: {problem}",
                     "cli-value", hint="the runtime reads overrides only from the command "
                     "line; reword the value, or use launcher: accelerate")


def _owned_keys(job: Job, runtime: str) -> Iterator[Diagnostic]:
    spec = job.spec
    for key in spec.overrides.torchtune:
        if key in RUNTIME_OWNED:
            yield _error(("overrides", "torchtune", key),
                         f'"{key}" is managed by the runtime {runtime} and may not be set in '
                         "the TrainJob's args", "runtime-owned",
                         hint=f"remove overrides.torchtune.{key}")
    if spec.model.tokenizer.uri:
        yield _error(("model", "tokenizer", "uri"),
                     "the runtime sets tokenizer.path (and tokenizer.merges_file) from the "
                     "model it downloads; a TrainJob may not set them", "runtime-owned",
                     hint="remove model.tokenizer.uri: the model's own tokenizer is used")
    if spec.model.tokenizer.special_tokens_uri:
        yield _error(("model", "tokenizer", "special_tokens_uri"),
                     "the torchtune runtime reads the tokenizer from its model volume only",
                     "runtime-tokenizer", hint="remove model.tokenizer.special_tokens_uri")
    if spec.output is not None and scheme(spec.output.uri) != "pvc":
        yield Diagnostic(
            Severity.WARNING,
            f"the runtime owns output_dir (/workspace/output); {spec.output.uri} is not "
            "uploaded to — only pvc:// outputs are mounted there", path=("output", "uri"),
            code="kubeflow.output-location")


def _locations(job: Job) -> Iterator[Diagnostic]:
    spec = job.spec
    if spec.data.mixture is not None:
        yield _error(("data", "mixture"), "the dataset initializer downloads one dataset; "
                     "a mixture cannot be trained by a torchtune runtime", "data-mixture",
                     hint="replace data.mixture with one data.train (hf:// or s3://), or use "
                     "launcher: accelerate")
    train = spec.data.train
    if train is not None and scheme(train.uri) not in ("hf", "s3"):
        yield _error(("data", "train", "uri"), "the dataset initializer reads hf:// or s3:// "
                     f"URIs, not {scheme(train.uri)}://", "initializer-uri",
                     hint="set data.train.uri: hf://ORG/NAME or s3://BUCKET/PATH")
    if scheme(spec.model.uri) not in ("hf", "s3"):
        yield _error(("model", "uri"), "the model initializer reads hf:// or s3:// URIs, not "
                     f"{scheme(spec.model.uri)}://", "initializer-uri",
                     hint="set model.uri: hf://ORG/NAME or s3://BUCKET/PATH")


TRAINER_PORT = 29500
RUNTIME_OWNED_PREFIXES = tuple(f"{key}=" for key in RUNTIME_OWNED)


def _arg_enabled(args: list[str], key: str) -> bool:
    return any(a.split("=", 1)[0] == key and a.split("=", 1)[1].lower() == "true" for a in args if "=" in a)


def controller_recipe(trainjob: dict[str, Any], gpus_per_node: int) -> tuple[str, str]:
    """(recipe, config) the Trainer's torchtune plugin picks for a TrainJob with ``command: [tune, run]``.

    The rule lives in the controller (Go), so it is written again here to say in the plan what
    the pod will run; the real-controller tests compare it with the pods the Trainer renders.
    Single device when one node runs one process (or has one GPU); the LoRA recipes when the
    args carry ``model.lora_attn_modules`` (QLoRA when ``model.quantize_base=True``); the full
    distributed recipe otherwise (``_full_multinode`` past one node)."""
    trainer = (trainjob.get("spec") or {}).get("trainer") or {}
    args = [str(a) for a in trainer.get("args") or []]
    nodes = int(trainer.get("numNodes") or 1)
    procs = trainer.get("numProcPerNode")
    lora = any(a.split("=", 1)[0] == "model.lora_attn_modules" for a in args)
    qlora = lora and _arg_enabled(args, "model.quantize_base")
    single = nodes == 1 and (procs == 1 or gpus_per_node == 1)
    if single:
        recipe = "lora_finetune_single_device" if lora else "full_finetune_single_device"
        suffix = "_qlora_single_device" if qlora else "_lora_single_device" if lora else "_full_single_device"
    elif nodes == 1 and lora:
        recipe, suffix = "lora_finetune_distributed", "_qlora" if qlora else "_lora"
    else:
        recipe, suffix = "full_finetune_distributed", "_full_multinode" if nodes > 1 else "_full"
    ref = str(((trainjob.get("spec") or {}).get("runtimeRef") or {}).get("name") or "")
    fields = ref.split("-")
    model = f"{fields[1].replace('.', '_')}/{fields[2].upper()}" if len(fields) == 3 else ""
    return recipe, model + suffix


def controller_command(trainjob: dict[str, Any], runtime: dict[str, Any], gpus_per_node: int) -> list[str]:
    """The trainer container's command after the Trainer's torchtune plugin: ``tune run``, the
    rendezvous endpoint when more than one process trains, the recipe and config it picks
    (``controller_recipe``), then the runtime-owned ``key=value`` entries of the runtime's own
    trainer command (output and tokenizer paths, the checkpoint folder)."""
    trainer = (trainjob.get("spec") or {}).get("trainer") or {}
    name = str((trainjob.get("metadata") or {}).get("name"))
    nodes = int(trainer.get("numNodes") or 1)
    procs = trainer.get("numProcPerNode")
    command = [str(c) for c in trainer.get("command") or []]
    if nodes > 1 or (isinstance(procs, int) and procs > 1) or (isinstance(procs, str) and gpus_per_node > 1):
        command.append(f"--rdzv_endpoint={name}-node-0-0.{name}:{TRAINER_PORT}")
    recipe, config = controller_recipe(trainjob, gpus_per_node)
    command += [recipe, "--config", config]
    for job in ((runtime.get("spec") or {}).get("template") or {}).get("spec", {}).get("replicatedJobs") or []:
        labels = ((job.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if labels.get("trainer.kubeflow.org/trainjob-ancestor-step") != "trainer":
            continue
        pod = ((job.get("template") or {}).get("spec") or {}).get("template", {}).get("spec") or {}
        for container in pod.get("containers") or []:
            if container.get("name") == "node":
                command += [str(c) for c in container.get("command") or [] if str(c).startswith(RUNTIME_OWNED_PREFIXES)]
    return command
