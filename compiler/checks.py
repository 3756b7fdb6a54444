"""Findings about a built Job that are advice, not errors (shared by validate and plan).

Light on purpose: ``ftspec validate`` calls this on every spec, so it imports only the
spec layer's diagnostics and the IR.
"""

from __future__ import annotations

from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.ir import Job
from ftspec.spec.model.method import LORA_FAMILY, QUANTIZED_LORA

MEMORY_FIT_CODE = "rule.memory-fit"


def job_warnings(job: Job) -> list[Diagnostic]:
    """Warnings about ``job`` (no spans; callers place them with the spec's source map)."""
    found: list[Diagnostic] = []
    memory = _memory_fit(job)
    if memory is not None:
        found.append(memory)
    return found + _unmatched_patterns(job)


def _unmatched_patterns(job: Job) -> list[Diagnostic]:
    """An ``unfrozen_parameters`` pattern that matches no parameter of the model the job
    trains (known for Llama-named decoders: ``memory_names``) freezes nothing into training:
    most likely a name written otherwise (PEFT's ``base_model.model.`` prefix with an
    adapter; ``re.match`` anchors at the start)."""
    if not job.spec.method.unfrozen_parameters:
        return []
    from ftspec.compiler.memory_frozen import unmatched_patterns

    patterns = job.spec.method.unfrozen_parameters
    lora = job.spec.method.kind != "full"
    return [Diagnostic(
        Severity.WARNING, f"pattern {patterns[i]!r} matches no parameter of "
        f"{job.model.display} (matched at the start of each name, re.match)",
        path=("method", "unfrozen_parameters", i),
        hint="names look like base_model.model.model.layers.3.mlp.up_proj.base_layer.weight "
        "with an adapter" if lora else "names look like model.layers.3.mlp.up_proj.weight; "
        "prefix .* to match inside a name",
        code="rule.unfrozen-unmatched")
        for i in unmatched_patterns(job.spec, job.model, job.lora_modules)]


def _memory_fit(job: Job) -> Diagnostic | None:
    mem = job.memory
    if mem.fits is not False or mem.capacity_gib is None:
        return None
    accelerator = job.spec.resources.accelerator or "the accelerator"
    parts = (
        f"weights {mem.weights_gib:g}, gradients {mem.gradients_gib:g}, optimizer "
        f"{mem.optimizer_gib:g}, activations {mem.activations_gib:g}, logits "
        f"{mem.logits_gib:g}, overhead "
        f"{mem.overhead_gib:g} GiB"
    )
    return Diagnostic(
        Severity.WARNING,
        f"estimated peak memory {mem.total_gib:.1f} GiB per GPU exceeds the "
        f"{mem.capacity_gib:g} GiB of {accelerator} ({parts})",
        path=("resources",),
        hint=_memory_hint(job),
        code=MEMORY_FIT_CODE,
    )


def _memory_hint(job: Job) -> str:
    spec = job.spec
    ideas: list[str] = []
    if not spec.training.gradient_checkpointing:
        ideas.append("training.gradient_checkpointing: true")
    if job.micro_batch_size > 1:
        ideas.append("a smaller training.micro_batch_size")
    if job.strategy != "fsdp" and job.world_size > 1:
        ideas.append("distributed.strategy: fsdp to shard weights and optimizer state")
    if spec.method.kind == "full":
        ideas.append("method.kind: lora or qlora")
    elif spec.method.kind in LORA_FAMILY - QUANTIZED_LORA:
        ideas.append("method.kind: qlora")
    ideas.append("more GPUs or a larger accelerator")
    return "try " + "; ".join(ideas)
