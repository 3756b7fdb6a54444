"""``ftspec output --compare``: the points of a sweep side by side (no printing here).

Each point is an ordinary job: its row is what ``output`` shows for one run — the phase,
the final loss (the last logged one), the measured properties (``reconciler.measured``,
where the backend measures: ``Measurer``) and the validity — plus the point's values.
``differing`` names the swept fields whose values are not the same in every point: the
columns a reader compares.

Points that trained at the same time shared the machine, so their runtime and throughput
measure the contention as much as the point: each row names the points whose run overlapped
its own in time (``ran_with``, from the run's start and end as the backend reports them:
``platform.run_started_at`` or ``started_at``, and ``ended_at``; None where the backend does
not say), and the table marks those cells.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ftspec.reconciler.backend import Backend, Desired, Measurer, Reporter
from ftspec.reconciler.outputs import final_metrics


@dataclass(frozen=True)
class PointRow:
    name: str
    address: str
    phase: str
    point: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    """``outputs.final_metrics``: steps, train_loss (the last logged), first_loss, …"""
    measured: dict[str, Any] = field(default_factory=dict)
    curve: dict[str, list[Any]] = field(default_factory=dict)
    """The logged steps, loss and learning rate (``--plot``)."""
    span: tuple[float, float] | None = None
    """When the run trained (epoch seconds, start and end; the end is now while it runs);
    None where the backend does not say."""
    ran_with: tuple[str, ...] | None = None
    """The other points whose run overlapped this one's in time (None: not known)."""
    outputs: dict[str, Any] = field(default_factory=dict)
    """What the point wrote (``outputs.produced``): its adapter, model and output location."""
    applied: bool = True
    """The backend has the point's run (False: never applied, or its run was destroyed)."""

    @property
    def final_loss(self) -> float | None:
        value = self.metrics.get("train_loss")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def validity(self) -> str | None:
        value = self.measured.get("validity")
        return str(value) if value is not None else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.address, "phase": self.phase,
                "applied": self.applied,
                "point": self.point, "final_loss": self.final_loss,
                "validity": self.validity, "metrics": self.metrics, "measured": self.measured,
                "ran_with": None if self.ran_with is None else list(self.ran_with),
                "adapter": self.outputs.get("adapter"), "model": self.outputs.get("model"),
                "output": self.outputs.get("uri")}


@dataclass(frozen=True)
class Comparison:
    spec_file: str
    rows: tuple[PointRow, ...]

    @property
    def fields(self) -> list[str]:
        return differing([r.point for r in self.rows])

    @property
    def best(self) -> PointRow | None:
        """The valid point with the lowest final loss (``output SWEEP --point best``)."""
        done = [r for r in self.rows if r.final_loss is not None and r.validity in (None, "ok")
                and r.phase == "Succeeded"]
        return min(done, key=lambda r: r.final_loss or 0.0) if done else None

    def to_json(self) -> dict[str, Any]:
        best = self.best
        return {"spec_file": self.spec_file, "fields": self.fields,
                "best": best.name if best else None,
                "points": [r.to_json() for r in self.rows]}


def differing(points: Sequence[dict[str, Any]]) -> list[str]:
    """The paths whose value is not the same in every point, in grid order."""
    paths = list(dict.fromkeys(p for point in points for p in point))
    return [p for p in paths
            if len({repr(point.get(p)) for point in points}) > 1]


def span_of(platform: dict[str, Any], now: float) -> tuple[float, float] | None:
    """When a run trained, from what its status reports (None: no start known)."""
    start = _time(platform.get("run_started_at")) or _time(platform.get("started_at"))
    if start is None or platform.get("exists") is False:
        return None
    if platform.get("queued") and platform.get("run_started_at") is None:
        return None  # still queued (or never started): it has not trained
    end = _time(platform.get("ended_at"))
    return start, end if end is not None else now


def _time(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def overlaps(spans: Sequence[tuple[str, tuple[float, float] | None]]
             ) -> list[tuple[str, ...] | None]:
    """For each (name, span): the names of the others whose span overlaps it in time (None
    where its own span is not known; a run that ended as another started did not overlap)."""
    out: list[tuple[str, ...] | None] = []
    for i, (_, span) in enumerate(spans):
        if span is None:
            out.append(None)
            continue
        out.append(tuple(name for j, (name, other) in enumerate(spans)
                         if j != i and other is not None
                         and max(span[0], other[0]) < min(span[1], other[1])))
    return out


def compare(backend: Backend, desired: Sequence[Desired], reporter: Reporter | None = None
            ) -> Comparison:
    """Every desired job's row, read from its backend (one status, one measurement each;
    a first measurement that takes long is said to ``reporter``)."""
    rows = []
    now = time.time()
    for d in desired:
        status = backend.status(d)[0]
        exists = status.platform.get("exists", True) and status.phase.value != "Unknown"
        measured = backend.measured(d, reporter) if exists and isinstance(backend, Measurer) \
            else {}
        rows.append(PointRow(
            name=d.job.name, address=status.address, phase=status.phase.value,
            point=dict(d.job.point), metrics=final_metrics(status.metrics),
            measured=measured, curve=dict(status.metrics.get("curve") or {}),
            span=span_of(status.platform, now) if exists else None,
            outputs={k: status.outputs[k] for k in ("adapter", "model", "uri")
                     if k in status.outputs}, applied=exists))
    ran_with = overlaps([(r.name, r.span) for r in rows])
    rows = [replace(r, ran_with=w) for r, w in zip(rows, ran_with, strict=True)]
    return Comparison(desired[0].spec_file if desired else "", tuple(rows))
