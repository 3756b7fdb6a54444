"""What the accelerate target (and its default entrypoint) cannot express."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity
from ftspec.spec.ir import Job
from ftspec.targets.accelerate_config import DEEPSPEED_KEYS, FSDP_KEYS


def _err(path: KeyPath, summary: str, code: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic(Severity.ERROR, summary, path=path, hint=hint,
                      code=f"target.accelerate.{code}")


def _warn(path: KeyPath, summary: str, code: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic(Severity.WARNING, summary, path=path, hint=hint,
                      code=f"target.accelerate.{code}")


def check(job: Job) -> list[Diagnostic]:
    return list(_check(job))


def _check(job: Job) -> Iterator[Diagnostic]:
    spec = job.spec
    fsdp = spec.distributed.fsdp
    if job.strategy == "fsdp" and fsdp is not None and fsdp.version == 2 \
            and fsdp.sharding not in ("full_shard", "shard_grad_op"):
        yield _err(("distributed", "fsdp", "sharding"), f"accelerate's FSDP2 config reshards or "
                   f"not (full_shard / shard_grad_op); {fsdp.sharding} needs FSDP1",
                   "fsdp2-sharding", hint="use version: 1, or full_shard")
    if spec.training.max_steps_per_epoch is not None:
        yield _err(("training", "max_steps_per_epoch"), "max_steps_per_epoch is torchtune's; "
                   "accelerate entrypoints stop by epochs or max_steps", "max-steps-per-epoch",
                   hint="use training.max_steps")
    if spec.data.mixture is not None:
        yield _err(("data", "mixture"), "the accelerate target passes one training file; "
                   "dataset mixtures are not supported", "mixture")
    for key in spec.overrides.accelerate:
        if key in ("fsdp_config", "deepspeed_config"):
            allowed = FSDP_KEYS if key == "fsdp_config" else DEEPSPEED_KEYS
            value = spec.overrides.accelerate[key]
            bad = sorted(set(value) - allowed) if isinstance(value, dict) else ["(not a map)"]
            if bad:
                yield _err(("overrides", "accelerate", key), f"unknown {key} keys {bad} "
                           "(accelerate ignores them silently)", "nested-keys")
    from ftspec.targets.accelerate import uses_default_entrypoint

    if uses_default_entrypoint(job):
        yield from _default_entrypoint(job)


def _default_entrypoint(job: Job) -> Iterator[Diagnostic]:
    """ftspec.targets.entrypoints.hf_sft: JSONL data, LoRA or full, AdamW or SGD."""
    from ftspec.targets.accelerate import DEFAULT_ENTRYPOINT_OPTIMIZERS, hf_optim

    spec = job.spec
    t = spec.training
    hint = "set entrypoint.module or entrypoint.script to your own training program"
    kind = spec.method.kind
    if kind not in ("full", "lora"):
        yield _err(("method", "kind"), f"the default entrypoint trains full or lora, not {kind}",
                   "entrypoint-method", hint=hint)
    ds = spec.data.train
    if ds is not None:
        if ds.uri.startswith("hf://"):
            yield _err(("data", "train", "uri"), "the default entrypoint reads a local JSONL "
                       "file, not a hub dataset", "entrypoint-data",
                       hint="give a file:// or pvc:// JSONL file, or " + hint)
        if ds.format not in ("instruct", "completion"):
            yield _err(("data", "train", "format"), f"the default entrypoint renders prompt/"
                       f"completion pairs; {ds.format} data is not supported",
                       "entrypoint-format", hint=hint)
        if ds.format == "completion" and (ds.prompt_template is None
                                          or ds.completion_template is None):
            yield _err(("data", "train"), "completion data needs prompt_template and "
                       "completion_template", "entrypoint-templates")
        for field in ("prompt_func", "completion_func", "response_template",
                      "new_system_prompt", "subset"):
            if getattr(ds, field) is not None:
                yield _err(("data", "train", field), f"the default entrypoint has no {field}",
                           "entrypoint-data-option", hint=hint)
    optim = hf_optim(job)
    if optim not in DEFAULT_ENTRYPOINT_OPTIMIZERS:
        yield _err(("training", "optimizer", "name"), f"the default entrypoint runs adamw or "
                   f"sgd, not {t.optimizer.name}", "entrypoint-optimizer", hint=hint)
    o = t.optimizer
    if o.betas != (0.9, 0.999) or o.eps != 1e-8 or o.momentum != 0.0:
        yield _err(("training", "optimizer"), "the default entrypoint uses torch's default "
                   "betas, eps and momentum", "entrypoint-optimizer-args", hint=hint)
    if t.scheduler.name in ("cosine", "cosine_with_restarts") and t.scheduler.num_cycles != 0.5:
        yield _err(("training", "scheduler", "num_cycles"), "the default entrypoint uses "
                   "transformers' default cycles", "entrypoint-cycles", hint=hint)
    lora = spec.method.lora
    if lora is not None and (lora.bias != "none" or lora.modules_to_save or lora.output
                             or lora.init_weights != "default"):
        yield _err(("method", "lora"), "the default entrypoint's LoRA has no bias, "
                   "modules_to_save, output or init_weights options", "entrypoint-lora",
                   hint=hint)
    if t.max_grad_norm is not None and job.strategy != "deepspeed":
        yield _warn(("training", "max_grad_norm"), "the default entrypoint does not clip "
                    "gradients; max_grad_norm is ignored", "entrypoint-clip")
    if not spec.data.shuffle:
        yield _warn(("data", "shuffle"), "the default entrypoint always shuffles",
                    "entrypoint-shuffle")
    if t.evaluation.strategy != "no" or spec.data.validation is not None \
            or t.early_stopping is not None:
        yield _warn(("training", "evaluation"), "the default entrypoint does not evaluate; "
                    "evaluation and early stopping are ignored", "entrypoint-eval")
    if t.activation_offloading:
        yield _warn(("training", "activation_offloading"), "accelerate has no activation "
                    "offloading; it is ignored", "offloading")
