"""What `ftspec explain` shows, as JSON-able data (the human view is drawn from it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ftspec.compiler.memory import fit_by_accelerator
from ftspec.compiler.time_cost import estimate_time, throughput_of
from ftspec.compiler.units import size
from ftspec.spec.catalog.models import MODEL_FAMILIES
from ftspec.spec.catalog.verified import numbers_source
from ftspec.spec.ir import Job


def explain_data(job: Job, prices: Mapping[str, float] | None = None) -> dict[str, Any]:
    m = job.memory
    estimate, why = estimate_time(job, prices)
    fits = fit_by_accelerator(m, job.spec.model.dtype)
    acc = job.spec.resources.accelerator
    verdict = _verdict(job)
    return {
        "name": job.name,
        "spec_id": job.spec_id,
        "summary": job.summary,
        "derived": {
            "nodes": job.nodes,
            "processes_per_node": job.procs_per_node,
            "world_size": job.world_size,
            "total_gpus": job.total_gpus,
            "device": job.device,
            "strategy": job.strategy,
            "micro_batch_size": job.micro_batch_size,
            "gradient_accumulation_steps": job.gradient_accumulation_steps,
            "global_batch_size": job.global_batch_size,
            "max_seq_len": job.max_seq_len,
            "tokens_per_step": job.tokens_per_step,
            "steps_per_epoch": job.steps_per_epoch,
            "total_steps": job.total_steps,
            "warmup_steps": job.warmup_steps,
            "learning_rate": job.spec.training.learning_rate,
            "epochs": job.spec.training.epochs if job.spec.training.max_steps is None else None,
            "max_steps": job.spec.training.max_steps,
            "max_steps_per_epoch": job.spec.training.max_steps_per_epoch,
            "precision": job.spec.model.dtype,
            "precision_mode": job.spec.model.precision_mode,
            "optimizer": job.spec.training.optimizer.name,
            "scheduler": job.spec.training.scheduler.name,
            "lora": _lora(job),
        },
        "memory": {
            "weights_gib": m.weights_gib,
            "gradients_gib": m.gradients_gib,
            "optimizer_gib": m.optimizer_gib,
            "activations_gib": m.activations_gib,
            "logits_gib": m.logits_gib,
            "overhead_gib": m.overhead_gib,
            "total_gib": round(m.total_gib, 2),
            "trainable_params_b": m.trainable_params_b,
            "params_b": job.model.params_b,
            "accelerator": acc,
            "capacity_gib": m.capacity_gib,
            "fits": m.fits,
            "notes": list(m.notes),
        },
        "verdict": verdict,
        "time": estimate.to_json() if estimate else _unpredicted(job, why),
        "accelerators": [
            {"key": f.key, "display": f.display, "capacity_gib": f.capacity_gib,
             "need_gib": f.need_gib, "fits": f.fits, "bf16": f.bf16,
             "headroom_gib": f.headroom_gib}
            for f in fits
        ],
    }


def _unpredicted(job: Job, why: str) -> dict[str, Any]:
    """Why no time is predicted, and the throughput where the accelerator's peak is known
    (the steps are not)."""
    pred = throughput_of(job)
    out: dict[str, Any] = {"unpredicted": why}
    if pred is not None:
        out["tokens_per_s_per_device"] = round(pred.tokens_per_s, 1)
    return out


def _lora(job: Job) -> dict[str, Any] | None:
    if not job.lora_modules:
        return None
    lora = job.spec.method.lora_settings
    return {"rank": lora.rank, "alpha": lora.alpha, "dropout": lora.dropout,
            "target_modules": list(job.lora_modules)}


def _verdict(job: Job) -> str:
    m = job.memory
    need = size(m.total_gib)
    if job.device == "cpu":
        return f"a CPU run: needs about {need} of memory per process"
    if m.capacity_gib is None:
        return (f"needs about {need} per GPU (no resources.accelerator: the table above "
                "shows where it fits)")
    acc = job.spec.resources.accelerator
    if m.fits:
        return f"fits: about {need} of {size(m.capacity_gib)} per GPU ({acc})"
    return (f"does not fit: needs about {need} per GPU, {acc} has {size(m.capacity_gib)}; "
            "shard (FSDP/ZeRO), checkpoint activations, lower the micro batch, or use LoRA/QLoRA")


def families_data() -> list[dict[str, Any]]:
    return [
        {"family": f.key, "display": f.display, "params_b": f.params_b, "layers": f.num_layers,
         "hidden": f.hidden_size, "vocab": f.vocab_size,
         "torchtune": f"{f.torchtune[0]}/{f.torchtune[1]}" if f.torchtune else None,
         "hf_layer_cls": f.hf_layer_cls, "numbers": numbers_source(f.key)}
        for f in MODEL_FAMILIES.values()
    ]
