"""accelerate target: an accelerate config file and the ``accelerate launch`` command.

``accelerate launch --config_file accelerate.yaml [--num_processes N] -m MODULE ARGS`` runs
the training entrypoint: ``entrypoint.module`` / ``entrypoint.script`` from the spec, else
ftspec's default Hugging Face SFT entrypoint (``ftspec.targets.entrypoints.hf_sft``). The
spec's training settings become that entrypoint's flags (``training_args``); user
entrypoints receive the same flags (plus PEFT/quantization flags for the methods the
default entrypoint lacks) and ``entrypoint.args``. Artifacts: ``accelerate.yaml`` and
``command.sh``.
"""

from __future__ import annotations

import json
import shlex

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job
from ftspec.targets.accelerate_config import config_dict, dump_config, uses_fsdp_checkpointing
from ftspec.targets.base import Artifact, Launch
from ftspec.targets.paths import RunPaths, default_paths

CONFIG_FILE = "accelerate.yaml"
COMMAND_FILE = "command.sh"
DEFAULT_ENTRYPOINT = "ftspec.targets.entrypoints.hf_sft"

HF_OPTIMIZERS: dict[str, str] = {
    "adamw": "adamw_torch", "sgd": "sgd", "adafactor": "adafactor",
    "adamw_8bit": "adamw_bnb_8bit", "paged_adamw_8bit": "paged_adamw_8bit",
    "paged_adamw_32bit": "paged_adamw_32bit", "lion": "lion_32bit", "rmsprop": "rmsprop",
}
"""Spec optimizer -> Hugging Face ``optim`` name (adamw + fused -> adamw_torch_fused)."""
DEFAULT_ENTRYPOINT_OPTIMIZERS = frozenset({"adamw_torch", "adamw_torch_fused", "sgd"})
INSTRUCT_PROMPT = "{input}"
INSTRUCT_COMPLETION = "{output}"


def uses_default_entrypoint(job: Job) -> bool:
    e = job.spec.entrypoint
    return e.module is None and e.script is None


def hf_optim(job: Job) -> str | None:
    o = job.spec.training.optimizer
    name = HF_OPTIMIZERS.get(o.name)
    if name == "adamw_torch" and o.fused:
        return "adamw_torch_fused"
    return name


def _fmt(value: float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def training_args(job: Job, paths: RunPaths | None = None) -> list[str]:
    """The entrypoint's flags for this Job (run ``check`` first)."""
    spec = job.spec
    t = spec.training
    p = paths or default_paths(job)
    ds = spec.data.train
    assert ds is not None
    args = ["--model_name_or_path", p.model_id]
    if p.tokenizer is not None:
        args += ["--tokenizer_name_or_path", p.tokenizer]
    args += ["--train_file", p.train.files or p.train.hub_name or ""]
    if ds.column_map:
        args += ["--column_map", json.dumps(dict(sorted(ds.column_map.items())),
                                            separators=(",", ":"))]
    prompt = ds.prompt_template or (INSTRUCT_PROMPT if ds.format == "instruct" else None)
    completion = ds.completion_template or (
        INSTRUCT_COMPLETION if ds.format == "instruct" else None)
    if prompt is not None:
        args += ["--prompt_template", prompt]
    if completion is not None:
        args += ["--completion_template", completion]
    if ds.train_on_input:
        args.append("--train_on_input")
    args += [
        "--max_seq_length", str(job.max_seq_len),
        "--per_device_train_batch_size", str(job.micro_batch_size),
        "--gradient_accumulation_steps", str(job.gradient_accumulation_steps),
        "--learning_rate", _fmt(t.learning_rate),
        "--weight_decay", _fmt(t.optimizer.weight_decay),
    ]
    if t.max_steps is not None:
        args += ["--max_steps", str(t.max_steps)]
    else:
        args += ["--num_train_epochs", str(t.epochs or 1)]
    args += ["--lr_scheduler_type", t.scheduler.name]
    if job.warmup_steps is not None:
        args += ["--warmup_steps", str(job.warmup_steps)]
    elif t.scheduler.warmup_ratio is not None:
        args += ["--warmup_ratio", _fmt(t.scheduler.warmup_ratio)]
    args += ["--optim", hf_optim(job) or t.optimizer.name]
    if t.seed is not None:
        args += ["--seed", str(t.seed)]
    if spec.model.dtype in ("bf16", "fp16"):
        args.append(f"--{spec.model.dtype}")
    if t.gradient_checkpointing and not uses_fsdp_checkpointing(job):
        args.append("--gradient_checkpointing")
    args += _peft_args(job)
    args += ["--output_dir", p.output_dir, "--logging_steps", str(t.logging.steps)]
    for key, value in spec.overrides.training_args.items():
        args += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    args += list(spec.entrypoint.args)
    return args


def _peft_args(job: Job) -> list[str]:
    m = job.spec.method
    if m.kind == "full":
        return ["--peft_method", "none"]
    if not job.lora_modules:
        return ["--peft_method", m.kind]  # ia3 / prompt_tuning: user entrypoints only
    lora = m.lora
    args = ["--peft_method", m.kind,
            "--lora_r", str(lora.rank if lora else 8),
            "--lora_alpha", _fmt(float(lora.alpha if lora else 16)),
            "--lora_dropout", _fmt(float(lora.dropout if lora else 0.05)),
            "--target_modules", *job.lora_modules]
    q = m.quantization
    if q is not None:  # qlora / gptq_lora: user entrypoints only
        args += ["--quant_bits", str(q.bits), "--quant_type", q.quant_type]
    return args


def entry_argv(job: Job) -> list[str]:
    e = job.spec.entrypoint
    if e.script is not None:
        return [e.script]
    return ["-m", e.module or DEFAULT_ENTRYPOINT]


def launch(job: Job, paths: RunPaths | None = None, config_path: str = CONFIG_FILE) -> Launch:
    """``accelerate launch`` with the generated config file.

    Multi-node runs need ``--machine_rank`` and ``--main_process_ip`` per node; the argv
    carries ``${NODE_RANK}`` and ``${MASTER_ADDR}`` for the platform (or the shell) to fill.
    """
    argv = ["accelerate", "launch", "--config_file", config_path]
    if job.world_size > 1:
        argv += ["--num_processes", str(job.world_size)]
    if job.nodes > 1:
        argv += ["--num_machines", str(job.nodes), "--machine_rank", "${NODE_RANK}",
                 "--main_process_ip", "${MASTER_ADDR}"]
    argv += entry_argv(job) + training_args(job, paths)
    env = {"ACCELERATE_USE_CPU": "true"} if job.device == "cpu" and job.world_size > 1 else {}
    return Launch(argv=tuple(argv), files={CONFIG_FILE: config_text(job)}, env=env)


def config_text(job: Job) -> str:
    head = f"# Generated by ftspec from spec {job.spec_id} (hash {job.spec_hash}); do not edit.\n"
    return head + dump_config(config_dict(job))


def command_text(job: Job) -> str:
    run = launch(job, config_path=f'"$(dirname "$0")/{CONFIG_FILE}"')
    parts = []
    for arg in run.argv:
        if arg.startswith('"$(dirname'):
            parts.append(arg)
        elif arg.startswith("${"):
            parts.append(f'"{arg}"')
        else:
            parts.append(shlex.quote(arg))
    lines = ["#!/bin/sh",
             f"# Generated by ftspec from spec {job.spec_id} (hash {job.spec_hash}); do not edit."]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(run.env.items())]
    body = " \\\n    ".join(_group(parts))
    lines.append(f"exec {body}")
    return "\n".join(lines) + "\n"


def _group(parts: list[str]) -> list[str]:
    """One flag and its values per line, for review."""
    out: list[str] = []
    for part in parts:
        if out and not part.startswith("--") and part != "-m":
            out[-1] += " " + part
        else:
            out.append(part)
    return out


class AccelerateTarget:
    name = "accelerate"

    def check(self, job: Job) -> list[Diagnostic]:
        from ftspec.targets.accelerate_checks import check

        return check(job)

    def compile(self, job: Job) -> list[Artifact]:
        return [
            Artifact(CONFIG_FILE, "config", config_text(job), obj=config_dict(job)),
            Artifact(COMMAND_FILE, "command", command_text(job)),
        ]


TARGET = AccelerateTarget()
