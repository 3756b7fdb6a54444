"""Which point of a sweep a command means: `--point NAME` (its name, its identity, or its
label: `tiny-sweep-lr-1e-2`, `lr-1e-2`), the one place `logs` and `output` pick it."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def one_point(desired: list[Any], point: str | None, spec: Path) -> Any:
    """The job asked for: the spec's own, or the sweep point ``point`` names; a
    ``BackendError`` naming the points when none (or several) match."""
    from ftspec.reconciler.backend import BackendError

    if point is None and len(desired) == 1:
        return desired[0]
    names = [d.job.name for d in desired]
    chosen = [d for d in desired if point in (d.job.name, d.job.spec_id)
              or d.job.name.endswith(f"-{point}")]
    if len(chosen) != 1:
        what = f"has no point named {point!r}" if point else \
            f"is a sweep of {len(desired)} points: name one with --point"
        raise BackendError(f"{spec} {what}", hint="points: " + ", ".join(names))
    return chosen[0]
