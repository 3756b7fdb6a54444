"""The job in ML terms: the quantities `explain` shows and `plan` diffs in words."""

from __future__ import annotations

from ftspec.spec.ir import Job

SUMMARY_ANNOTATION = "ftspec.dev/summary"
"""Platform objects carry ``ml_summary`` as JSON so a later plan can say what changed."""


def _num(value: float) -> str:
    return f"{value:g}"


def ml_summary(job: Job) -> dict[str, str]:
    """Ordered, human-named quantities; values are strings so diffs read naturally."""
    spec = job.spec
    t = spec.training
    out = {
        "model": job.model.display,
        "method": spec.method.kind,
        "learning rate": _num(t.learning_rate),
        "effective batch": str(job.global_batch_size),
        "micro batch": str(job.micro_batch_size),
        "gradient accumulation": str(job.gradient_accumulation_steps),
        "epochs": str(t.epochs) if t.epochs is not None else "-",
        "max steps": str(job.total_steps) if job.total_steps is not None else "-",
        "row format": job.row_format.name,
        "sequence length": str(job.max_seq_len) if job.max_seq_len is not None
        else f"no truncation (context {job.model.context_len})",
        "precision": f"{spec.model.dtype} {spec.model.precision_mode}",
        "optimizer": t.optimizer.name,
        "scheduler": t.scheduler.name,
        "nodes": str(job.nodes),
        "GPUs": str(job.total_gpus),
        "world size": str(job.world_size),
        "strategy": job.strategy,
    }
    stops = [name for name, rule in (("training.stop", t.stop),
                                     ("training.early_stopping", t.early_stopping)) if rule]
    if stops:  # may end the run before "max steps": a shorter run is then still valid
        out["stop rule"] = ", ".join(stops)
    lora = spec.method.lora_settings
    if job.lora_modules:
        out["LoRA rank"] = str(lora.rank)
        out["LoRA alpha"] = _num(lora.alpha)
        out["LoRA modules"] = ",".join(job.lora_modules)
    return out


def describe_changes(before: dict[str, str], after: dict[str, str]) -> tuple[str, ...]:
    """``learning rate 0.0002 -> 0.0001`` lines for every quantity that differs."""
    lines = []
    for key, new in after.items():
        old = before.get(key)
        if old is not None and old != new:
            lines.append(f"{key} {old} -> {new}")
    return tuple(lines)
