"""``ftspec output --compare``: the points of a sweep side by side (no printing here).

Each point is an ordinary job: its row is what ``output`` shows for one run — the phase,
the final loss (the last logged one), the measured properties (``reconciler.measured``,
where the backend measures: ``Measurer``) and the validity — plus the point's values.
``differing`` names the swept fields whose values are not the same in every point: the
columns a reader compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ftspec.reconciler.backend import Backend, Desired, Measurer
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
                "point": self.point, "final_loss": self.final_loss,
                "validity": self.validity, "metrics": self.metrics, "measured": self.measured}


@dataclass(frozen=True)
class Comparison:
    spec_file: str
    rows: tuple[PointRow, ...]

    @property
    def fields(self) -> list[str]:
        return differing([r.point for r in self.rows])

    @property
    def best(self) -> PointRow | None:
        """The valid point with the lowest final loss."""
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


def compare(backend: Backend, desired: Sequence[Desired]) -> Comparison:
    """Every desired job's row, read from its backend (one status, one measurement each)."""
    rows = []
    for d in desired:
        status = backend.status(d)[0]
        exists = status.platform.get("exists", True) and status.phase.value != "Unknown"
        measured = backend.measured(d) if exists and isinstance(backend, Measurer) else {}
        rows.append(PointRow(
            name=d.job.name, address=status.address, phase=status.phase.value,
            point=dict(d.job.point), metrics=final_metrics(status.metrics),
            measured=measured, curve=dict(status.metrics.get("curve") or {})))
    return Comparison(desired[0].spec_file if desired else "", tuple(rows))
