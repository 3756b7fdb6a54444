"""What trains, beyond the PEFT method: LoRA+ learning rates and layer freezing, as
prepare.json's ``trainable`` entry for ftspec's accelerate entrypoint (TRL's ``trl sft`` has
neither: its ``ModelConfig`` has no LoRA+ ratio and no freezing patterns), and the accelerate
checks for the fields that change what trains (an 8-bit base on a CPU job)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.ir import Job

_FINDINGS = Findings("target.accelerate")


def trainable_entry(job: Job) -> dict[str, Any] | None:
    """prepare.json's ``trainable`` (None: the method's parameters train at one rate)."""
    m = job.spec.method
    out: dict[str, Any] = {}
    lora = m.lora if m.kind in ("lora", "qlora", "dora", "gptq_lora") else None
    if lora is not None and lora.loraplus_lr_ratio is not None:
        out["loraplus_lr_ratio"] = lora.loraplus_lr_ratio
        if lora.loraplus_lr_embedding is not None:
            out["loraplus_lr_embedding"] = lora.loraplus_lr_embedding
    if m.unfrozen_parameters:
        out["unfrozen_parameters"] = list(m.unfrozen_parameters)
    return out or None


def why_prepared(job: Job) -> list[str]:
    """The reasons ``needs_preparation`` gives for these fields."""
    entry = trainable_entry(job) or {}
    why = []
    if "loraplus_lr_ratio" in entry:
        why.append("method.lora.loraplus_lr_ratio: LoRA+ parameter groups TRL's CLI lacks")
    if "unfrozen_parameters" in entry:
        why.append("method.unfrozen_parameters: layer freezing TRL's CLI lacks")
    return why


def check(job: Job) -> Iterator[Diagnostic]:
    q = job.spec.method.quantization
    if job.spec.method.kind == "qlora" and q is not None and q.bits == 8 \
            and job.device == "cpu":
        yield _FINDINGS.error(("method", "quantization", "bits"), "an 8-bit base is "
                              "bitsandbytes' LLM.int8, whose int8 matmul runs on CUDA GPUs: "
                              "this job runs on CPU", "int8-cpu",
                              hint="give resources.accelerator a GPU, or use method.kind: "
                              "lora on the unquantized base")
