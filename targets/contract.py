"""The field contract: which spec fields each target honours, and a located diagnostic for
every other field set away from its default.

Three tables, read by ``contract_findings`` (called for every target by the compiler's
dispatch, so `validate`, `compile`, `plan` and `apply` all see the same findings):

- ``SECTIONS``: parts of the spec that belong to one deploy target or launcher. They are in
  scope when the compile target, the spec's launcher or its ``deploy.target`` is an owner;
  otherwise a non-default value is a warning (nothing runs differently: the section is for
  another platform).
- ``GAPS``: per launcher or platform, fields it cannot express: an error where the run
  would differ from the spec, a warning where ignoring the field is harmless.
- ``NOT_IN_ARTIFACTS``: fields honoured without changing the compiled files (they feed the
  estimate in `explain` or are read by a backend at run time), with where they are used.

``tests/contract`` proves the tables complete: for every schema leaf x target, moving the
field off its default changes the artifacts or yields one of these diagnostics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity
from ftspec.spec.ir import Job
from ftspec.spec.urls import scheme
from ftspec.targets.accelerate_ep import expert_parallel
from pydantic import BaseModel

SECTIONS: dict[KeyPath, tuple[str, ...]] = {
    ("deploy", "kubeflow"): ("kubeflow",),
    ("deploy", "kuberay"): ("kuberay",),
    ("deploy", "ray"): ("ray",),
    ("deploy", "local"): ("local",),
    ("deploy", "ray_nodes"): ("ray", "kuberay"),
    ("deploy", "scheduling"): ("kubeflow", "kuberay"),
    ("overrides", "trainjob"): ("kubeflow",),
    ("overrides", "rayjob"): ("kuberay",),
    ("overrides", "torchtune"): ("torchtune",),
    ("overrides", "accelerate"): ("accelerate",),
    ("overrides", "training_args"): ("accelerate",),
    ("entrypoint",): ("accelerate",),
    ("metadata", "labels"): ("kubeflow", "kuberay", "ray"),
    ("metadata", "annotations"): ("kubeflow", "kuberay", "ray"),
    ("metadata", "namespace"): ("kubeflow", "kuberay"),
    ("resources", "cpu"): ("kubeflow", "kuberay", "ray"),
    ("resources", "memory"): ("kubeflow", "kuberay"),
}
"""Section -> the deploy targets / launchers that read it."""


@dataclass(frozen=True)
class Gap:
    path: KeyPath
    severity: Severity
    reason: str
    hint: str | None = None
    when: Callable[[Job], bool] | None = None
    """Only when this holds (default: whenever the field is off its default)."""


_E, _W = Severity.ERROR, Severity.WARNING
_STOP_KEYS = ("after_seconds", "method", "warmup_seconds", "stable_seconds", "stable_steps")
_TT = "torchtune"
_FSDP_KNOB = "torchtune's recipes shard every decoder layer with FSDP2 and expose no {}"
_HF_ONLY = "torchtune builds the model from its own builders; {} is a Hugging Face setting"

_EP_FSDP = ("under expert parallelism transformers shards the model while loading it, by the "
            "model's own FSDP2 plan; accelerate's {} does not apply")
_EP_FSDP_KNOBS = {
    "auto_wrap": "wrap policy", "transformer_layer_cls": "wrapped class",
    "min_num_params": "size-based wrapping", "reshard_after_forward": "resharding switch",
    "sync_module_states": "weight broadcast (each process loads its own shard)",
    "cpu_ram_efficient_loading": "loading switch (each process loads its own shard)",
    "state_dict_type": "checkpoint layout (the Trainer saves the gathered weights)",
}


def _hf_tokenized(job: Job) -> bool:
    """The accelerate launcher's rows go through the Hugging Face tokenizer (instruct and
    alpaca rows of a model torchtune has a tokenizer for take torchtune's, special tokens
    file included: ``accelerate_tokens``)."""
    from ftspec.targets.accelerate_tokens import torchtune_tokenized

    return not torchtune_tokenized(job)


def _jinja_template(job: Job) -> bool:
    from ftspec.targets.chat_format import template_kind

    return template_kind(job.spec.model.chat_template) in ("jinja", "file")


_TT_STOP = ("torchtune 0.6.1's recipes have no callback and no hook between optimizer steps: "
            "their loop ends by epochs and max_steps_per_epoch only, so nothing can ask it to "
            "stop by the clock (and Kubeflow's torchtune runtimes run `tune run` as it is)")


GAPS: dict[str, tuple[Gap, ...]] = {
    "torchtune": (
        *(Gap(("training", "stop", key), _E, _TT_STOP, "use launcher: accelerate (its "
              "entrypoint stops by the clock), or bound the run with training.max_steps / "
              "max_steps_per_epoch") for key in _STOP_KEYS),
        Gap(("distributed", "expert_parallel"), _E, "torchtune 0.6.1 has no expert "
            "parallelism, nor any mixture-of-experts model (the memory estimate in `explain` "
            "shows what it would save)", "use launcher: accelerate (transformers' expert "
            "parallelism)"),
        Gap(("model", "revision"), _E, "the torchtune target reads the model files the "
            "download step fetched; it cannot pin a revision",
            "pin the revision in the download (hf://org/repo@rev is not read either), or "
            "use launcher: accelerate"),
        Gap(("model", "auto_class"), _E, _HF_ONLY.format("auto_class"),
            "torchtune trains causal LMs only"),
        Gap(("method", "task_type"), _E, "torchtune trains causal LMs only"),
        Gap(("model", "chat_template"), _E, "torchtune 0.6.1 formats chats with its "
            "tokenizer's prompt template classes; a Jinja chat template is not read",
            "name one of torchtune's templates (llama2, mistral, chatml), or use "
            "launcher: accelerate", when=_jinja_template),
        Gap(("model", "device_map"), _W, _HF_ONLY.format("device_map")),
        Gap(("model", "trust_remote_code"), _W, _HF_ONLY.format("trust_remote_code")),
        Gap(("model", "use_cache"), _W, _HF_ONLY.format("use_cache")),
        Gap(("model", "tokenizer", "pad_token"), _W, "torchtune's tokenizers have a fixed "
            "pad id; pad_token is ignored"),
        Gap(("method", "quantization", "compute_dtype"), _E, "torchtune's QLoRA quantizes "
            "to NF4 and computes in the model dtype"),
        Gap(("method", "quantization", "double_quant"), _E, "torchtune's NF4 has no "
            "double-quantization switch"),
        Gap(("method", "quantization", "quant_type"), _E, "torchtune's QLoRA is NF4 only"),
        Gap(("method", "quantization", "storage_dtype"), _E, "torchtune's NF4 tensors "
            "have a fixed storage type"),
        Gap(("method", "quantization", "bits"), _E, "torchtune's QLoRA is 4-bit only"),
        Gap(("method", "lora", "loraplus_lr_ratio"), _E, "torchtune's LoRA recipes build "
            "one optimizer group at one learning rate: LoRA+ has no setting there",
            "use launcher: accelerate (PEFT's LoRA+ optimizer)"),
        Gap(("method", "lora", "loraplus_lr_embedding"), _E, "torchtune's LoRA recipes "
            "have no LoRA+", "use launcher: accelerate"),
        Gap(("method", "unfrozen_parameters"), _E, "torchtune's recipes train every "
            "parameter of the method (all of them for full, the adapters for LoRA): they "
            "have no freezing patterns", "use launcher: accelerate"),
        Gap(("data", "num_workers"), _W, "torchtune 0.6.1's recipes build their data "
            "loader without worker processes"),
        Gap(("training", "checkpointing", "strategy"), _E, "torchtune saves a checkpoint "
            "at the end of every epoch, and only then", "use strategy: epoch",
            when=lambda job: job.spec.training.checkpointing.strategy != "epoch"),
        Gap(("training", "checkpointing", "total_limit"), _W, "torchtune keeps every "
            "epoch's checkpoint"),
        Gap(("training", "checkpointing", "resume_from"), _E, "the torchtune target "
            "cannot resume from a checkpoint", "start from the checkpoint as model.uri"),
        Gap(("training", "logging", "strategy"), _W, "torchtune logs every "
            "training.logging.steps steps"),
        Gap(("output", "push_to_hub"), _E, "torchtune does not upload to the Hub",
            "upload the output folder afterwards, or use launcher: accelerate"),
        Gap(("distributed", "fsdp", "auto_wrap"), _W, _FSDP_KNOB.format("auto_wrap")),
        Gap(("distributed", "fsdp", "min_num_params"), _W,
            _FSDP_KNOB.format("size-based wrapping")),
        Gap(("distributed", "fsdp", "transformer_layer_cls"), _W,
            _FSDP_KNOB.format("choice of wrapped class")),
        Gap(("distributed", "fsdp", "backward_prefetch"), _W, _FSDP_KNOB.format("prefetch")),
        Gap(("distributed", "fsdp", "forward_prefetch"), _W, _FSDP_KNOB.format("prefetch")),
        Gap(("distributed", "fsdp", "sync_module_states"), _W,
            _FSDP_KNOB.format("sync_module_states")),
        Gap(("distributed", "fsdp", "use_orig_params"), _W,
            _FSDP_KNOB.format("use_orig_params (FSDP1 only)")),
        Gap(("distributed", "fsdp", "cpu_ram_efficient_loading"), _W,
            _FSDP_KNOB.format("loading switch (rank 0 loads and broadcasts)")),
        Gap(("distributed", "fsdp", "state_dict_type"), _W, "torchtune gathers a full "
            "state dict for its checkpoints"),
    ),
    "accelerate": (
        *(Gap(("distributed", "fsdp", key), _W, _EP_FSDP.format(what), when=expert_parallel)
          for key, what in _EP_FSDP_KNOBS.items()),
        Gap(("distributed", "ddp"), _W, "the accelerate target leaves DDP's settings at "
            "PyTorch's defaults (backend, bucket size, unused parameters, timeout)"),
        Gap(("model", "architecture"), _W, "accelerate loads the model's own config.json "
            "from model.uri; model.architecture only feeds the memory estimate"),
        Gap(("model", "tokenizer", "special_tokens_uri"), _W, "special_tokens_uri is for "
            "torchtune's Llama 3 tokenizers: these rows are tokenized by the Hugging Face "
            "tokenizer, which has its own", when=_hf_tokenized),
        Gap(("distributed", "fsdp", "backward_prefetch"), _W, "FSDP2 has no backward "
            "prefetch setting", when=lambda job: _fsdp_version(job) == 2),
        Gap(("distributed", "fsdp", "forward_prefetch"), _W, "FSDP2 has no forward "
            "prefetch setting", when=lambda job: _fsdp_version(job) == 2),
        Gap(("distributed", "fsdp", "use_orig_params"), _W, "FSDP2 always keeps the "
            "original parameters", when=lambda job: _fsdp_version(job) == 2),
        Gap(("distributed", "fsdp", "sync_module_states"), _W, "accelerate syncs module "
            "states whenever cpu_ram_efficient_loading is on",
            when=lambda job: not expert_parallel(job)
            and job.spec.distributed.fsdp is not None
            and job.spec.distributed.fsdp.cpu_ram_efficient_loading),
        Gap(("data", "train", "loader"), _E, "the accelerate entrypoint reads JSON/JSONL "
            "and Parquet files and hub datasets", "convert the data to JSON Lines",
            when=lambda job: job.spec.data.train is not None
            and job.spec.data.train.loader not in (None, "json", "parquet")),
        Gap(("data", "train", "loader"), _W, "the accelerate entrypoint loads hub "
            "datasets by the hub's own layout", "remove loader",
            when=lambda job: job.spec.data.train is not None
            and scheme(job.spec.data.train.uri) == "hf"
            and job.spec.data.train.loader == "json"),
        Gap(("data", "validation", "loader"), _W, "the accelerate entrypoint loads hub "
            "datasets by the hub's own layout", "remove loader",
            when=lambda job: job.spec.data.validation is not None
            and scheme(job.spec.data.validation.uri) == "hf"
            and job.spec.data.validation.loader == "json"),
        Gap(("data", "validation", "loader"), _E, "the accelerate entrypoint reads JSON/JSONL "
            "and Parquet files and hub datasets", "convert the data to JSON Lines",
            when=lambda job: job.spec.data.validation is not None
            and job.spec.data.validation.loader not in (None, "json", "parquet")),
        Gap(("model", "use_cache"), _W, "the entrypoint turns the KV cache off for "
            "training"),
        Gap(("output", "merge_adapter"), _E, "the accelerate entrypoint saves the adapter; "
            "it does not merge it into the base model", "merge after training"),
        Gap(("output", "push_to_hub"), _E, "the accelerate entrypoint does not upload to "
            "the Hub", "upload the output folder afterwards"),
        Gap(("output", "save_adapter_only"), _E, "the accelerate entrypoint saves the "
            "adapter only", "keep save_adapter_only: true",
            when=lambda job: job.spec.method.kind != "full"),  # full: the whole model is saved
        Gap(("training", "logging", "strategy"), _W, "the accelerate entrypoint logs every "
            "training.logging.steps steps"),
    ),
}
"""Launcher (torchtune / accelerate) -> fields it does not honour."""

NOT_IN_ARTIFACTS: dict[KeyPath, str] = {
    ("metadata", "description"): "documentation only",
    ("metadata", "id"): "the job's identity: the address plan and apply use, the ownership "
                        "label of platform objects, the local run folder",
    ("data", "train", "num_examples"): "steps per epoch and warm-up in the Job (explain)",
    ("data", "validation", "num_examples"): "documentation only (evaluation size)",
    ("data", "mixture", "datasets", "*", "num_examples"): "steps per epoch in the Job",
    ("model", "params_b"): "the memory estimate",
    **{(*at, "as_chat"): "torchtune's instruct_dataset always renders rows as messages "
       "through the tokenizer's prompt template (accelerate: prepare.json)"
       for at in (("data", "train"), ("data", "validation"), ("data", "mixture", "datasets",
                                                                "*"))},
    ("resources", "accelerator"): "the memory estimate and the precision checks "
                                  "(and node selection on Kubernetes)",
    ("secrets",): "read by the backend at apply time (environment / Secret references)",
    ("deploy", "local", "env"): "read by the local backend at apply time",
    ("deploy", "ray", "address"): "read by the ray backend: the Jobs API it submits to",
    ("sweep",): "expanded before compiling: one job per grid point, each compiled with the "
                "point's values (compiler/sweep.py)",
    ("deploy", "target"): "picks the compile target (and backend) when --target is not given",
    ("model", "family"): "accelerate: the memory estimate and the FSDP layer class "
                         "(torchtune: its recipe config)",
}
"""Fields honoured without changing the compiled files, and where they are used."""


ABOUT: dict[str, tuple[KeyPath, ...]] = {}
"""Diagnostic code -> the fields it is about besides the key it is located at (a check that
points at the field to change, while the field that moved is another). The field-contract
test counts such a diagnostic as the answer for these fields too."""


def _fsdp_version(job: Job) -> int:
    fsdp = job.spec.distributed.fsdp
    return fsdp.version if fsdp is not None else 2


def off_default(spec: BaseModel, path: KeyPath) -> bool:
    """Whether the field at ``path`` differs from its default (an absent optional section
    is at its default)."""
    obj: Any = spec
    for i, key in enumerate(path):
        if not isinstance(obj, BaseModel):
            return False
        info = type(obj).model_fields[str(key)]
        value = getattr(obj, str(key))
        if i == len(path) - 1:
            return bool(value != info.get_default(call_default_factory=True))
        obj = value
    return False


def _scope(job: Job, target: str) -> set[str]:
    return {target, job.launcher, job.target}


def contract_findings(job: Job, target: str) -> list[Diagnostic]:
    """Diagnostics for fields ``target`` does not honour (paths only; placed later)."""
    return list(_findings(job, target))


def _findings(job: Job, target: str) -> Iterator[Diagnostic]:
    spec = job.spec
    scope = _scope(job, target)
    for path, owners in SECTIONS.items():
        if not scope & set(owners) and off_default(spec, path):
            yield Diagnostic(
                _W, f"{'.'.join(map(str, path))} is for {' / '.join(owners)}; the {target} "
                f"target ignores it", path=path, code="contract.other-target",
                hint=f"remove it, or compile for {owners[0]}")
    if target in GAPS and target != job.launcher:
        yield Diagnostic(
            _E, f"the spec's launcher is {job.launcher}; the {target} target would run "
            f"{target} instead", path=("launcher",), code="contract.launcher",
            hint=f"compile for {job.launcher}, or set launcher: {target}")
    launcher = target if target in GAPS else job.launcher
    for gap in GAPS.get(launcher, ()):
        if not off_default(spec, gap.path) or (gap.when is not None and not gap.when(job)):
            continue
        yield Diagnostic(gap.severity, gap.reason, path=gap.path, hint=gap.hint,
                         code=f"contract.{launcher}")
