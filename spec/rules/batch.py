"""Batch arithmetic: global batch = micro batch x gradient accumulation x world size."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules._diag import error


def batch_arithmetic(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    t = spec.training
    world = spec.resources.world_size
    gpus = spec.resources.total_gpus
    path = ("training", "global_batch_size")
    if spec.resources.gpus is not None and spec.resources.gpus % spec.resources.nodes:
        return  # the GPU layout itself is wrong (reported by gpus_divisible_by_nodes)
    if gpus > 0 and t.global_batch_size % gpus:
        yield error(
            path,
            f"global batch {t.global_batch_size} is not divisible by the {gpus} GPUs",
            "batch-divisible",
            hint=f"use a multiple of {gpus}",
        )
        return
    per_step = t.micro_batch_size * world
    if t.gradient_accumulation_steps is not None:
        expected = per_step * t.gradient_accumulation_steps
        if expected != t.global_batch_size:
            yield error(
                path,
                f"global batch {t.global_batch_size} != micro batch {t.micro_batch_size} x "
                f"gradient accumulation {t.gradient_accumulation_steps} x world size {world} "
                f"= {expected}",
                "batch-arithmetic",
                hint=f"set global_batch_size: {expected}, or drop gradient_accumulation_steps "
                "to derive it",
            )
    elif t.global_batch_size % per_step:
        yield error(
            path,
            f"global batch {t.global_batch_size} is not a multiple of micro batch "
            f"{t.micro_batch_size} x world size {world} = {per_step}, so no whole number of "
            "gradient accumulation steps gives it",
            "batch-arithmetic",
            hint=f"use a multiple of {per_step}",
        )
