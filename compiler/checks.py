"""Findings about a built Job (shared by validate and plan): advice on its values
(``job_warnings``) and the errors of its derived schedule (``schedule_errors``: a dataset
that fills no global batch, a run shorter than its warm-up), each at the spec field to change.

Light on purpose: ``ftspec validate`` calls this on every spec, so it imports only the
spec layer's diagnostics and the IR.
"""

from __future__ import annotations

from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.ir import Job
from ftspec.spec.model.method import LORA_FAMILY, QUANTIZED_LORA

MEMORY_FIT_CODE = "rule.memory-fit"
_BATCH: tuple[str, ...] = ("training", "global_batch_size")


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


def schedule_errors(job: Job) -> list[Diagnostic]:
    """The run the Job's steps describe would not train as asked: its declared rows fill no
    global batch on a launcher that drops the partial one (``zero_steps``), or it ends
    before the warm-up does (the learning rate never reaches ``learning_rate``)."""
    rows = _rows(job)
    if rows is not None:
        zero = zero_steps(job, *rows)
        if zero:
            return zero
    t = job.spec.training
    warmup = t.scheduler.warmup_steps
    total = job.total_steps
    if warmup is None or total is None or total >= warmup:
        return []
    if t.max_steps is not None:
        return [Diagnostic(
            Severity.ERROR, f"max_steps {total} < the {warmup} warm-up steps: the run would "
            f"end before the learning rate reaches {t.learning_rate:g}",
            path=("training", "max_steps"), code="rule.warmup-longer",
            hint=f"set training.scheduler.warmup_steps below {total}, or train longer")]
    per_epoch = job.steps_per_epoch
    capped = t.max_steps_per_epoch is not None and per_epoch == t.max_steps_per_epoch
    how = f"max_steps_per_epoch {per_epoch}" if capped or rows is None else \
        f"{rows[0]} rows / global batch {job.global_batch_size} = {per_epoch} steps an epoch"
    epochs = t.epochs or 1
    return [Diagnostic(
        Severity.ERROR, f"{how} x {epochs} epoch{'s' if epochs != 1 else ''} = {total} "
        f"optimizer steps, fewer than the {warmup} warm-up steps: the learning rate would "
        f"never reach {t.learning_rate:g}",
        path=("training", "max_steps_per_epoch") if capped else _BATCH,
        code="rule.warmup-longer",
        hint=f"set training.scheduler.warmup_steps below {total} (or a warmup_ratio), or "
        "train more steps: a smaller global batch, more epochs or more rows")]


def zero_steps(job: Job, rows: int, where: str) -> list[Diagnostic]:
    """``rows`` training rows (``where`` says whose: the spec's ``num_examples``, or the
    local backend's count of the file) fill no global batch, and the launcher drops the
    partial one (``LauncherFacts.drops_partial_batch``): the run would train no step."""
    from ftspec.compiler.build import full_steps

    if not job.launcher_facts.drops_partial_batch or full_steps(
            rows, job.world_size, job.micro_batch_size, job.gradient_accumulation_steps):
        return []
    processes = f"{job.world_size} process{'es' if job.world_size != 1 else ''}"
    return [Diagnostic(
        Severity.ERROR, f"{rows} rows / global batch {job.global_batch_size} = 0 full "
        f"batches: {job.launcher} drops the partial batch, so the run would train 0 steps",
        path=_BATCH, hint=f"use a global batch of at most {_largest_batch(job, rows)} "
        f"(= micro batch x gradient accumulation x {processes}), or train on more rows "
        f"({where})", code="rule.zero-steps")]


def _rows(job: Job) -> tuple[int, str] | None:
    """The training rows the spec declares, and the field(s) that say so."""
    from ftspec.compiler.build import train_examples

    rows = train_examples(job.spec)
    if rows is None:
        return None
    return rows, "data.train.num_examples" if job.spec.data.train is not None else \
        "the num_examples of data.mixture.datasets"


def _largest_batch(job: Job, rows: int) -> int:
    """The largest global batch of at most ``rows`` the processes split evenly."""
    return max(job.world_size, rows // job.world_size * job.world_size)
