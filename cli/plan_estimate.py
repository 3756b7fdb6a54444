"""The plan's time and cost: each run the plan starts (created or replaced), predicted by
``compiler.time_cost``, and their sum (a sweep's points run one after another). Carried by
``plan --json`` as ``estimate`` and drawn by the plan view as one line."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ftspec.reconciler.backend import Desired

if TYPE_CHECKING:  # imported when a run starts: the model behind it reads the spec (pydantic)
    from ftspec.compiler.time_cost import TimeEstimate

STARTS = ("create", "replace")


def _started(changes: Iterable[Mapping[str, Any]]) -> tuple[set[str], list[str]]:
    ids: set[str] = set()
    addresses: list[str] = []
    for ch in changes:
        if ch.get("action") not in STARTS:
            continue
        addresses.append(str(ch.get("address", "")))
        after = ch.get("after")
        if isinstance(after, dict) and isinstance(after.get("spec_id"), str):
            ids.add(after["spec_id"])
    return ids, addresses


def plan_estimate(desired: Iterable[Desired], changes: Iterable[Mapping[str, Any]],
                  prices: Mapping[str, float] | None) -> dict[str, Any] | None:
    """``{"runs": [...], "total": {...} | None, "line": str | None}`` for the runs the plan
    starts; None when it starts none."""
    ids, addresses = _started(changes)
    if not addresses:  # a plan that starts nothing (No changes) predicts nothing
        return None
    from ftspec.compiler.time_cost import estimate_time, short_line

    runs: list[dict[str, Any]] = []
    predicted: list[TimeEstimate] = []
    gpu = False
    for d in desired:
        job = d.job
        if job.spec_id not in ids and not any(a.endswith(job.name) for a in addresses):
            continue
        gpu = gpu or job.device == "cuda"
        est, why = estimate_time(job, prices)
        if est is None:
            runs.append({"spec_id": job.spec_id, "unpredicted": why})
            continue
        predicted.append(est)
        runs.append({"spec_id": job.spec_id, **est.to_json()})
    if not runs:
        return None
    total = _total(predicted) if predicted else None
    line: str | None = None  # a CPU run's plan stays as it was: it has no peak to predict from
    if predicted:
        line = short_line(predicted)
    elif gpu:
        line = "time: not predicted: " + next(r["unpredicted"] for r in runs
                                              if "unpredicted" in r)
    if line and predicted and len(predicted) < len(runs):
        line += f" ({len(runs) - len(predicted)} of {len(runs)} runs not predicted)"
    return {"runs": runs, "total": total, "line": line}


def _total(estimates: list[TimeEstimate]) -> dict[str, Any]:
    band = max(e.band for e in estimates)
    seconds = sum(e.seconds for e in estimates)
    hours = sum(e.device_hours for e in estimates)
    costs = [e.cost for e in estimates]
    cost = sum(c for c in costs if c is not None) if all(c is not None for c in costs) \
        else None
    return {
        "seconds": round(seconds, 1),
        "seconds_range": [round(seconds * (1 - band), 1), round(seconds * (1 + band), 1)],
        "device_hours": round(hours, 3),
        "device_hours_range": [round(hours * (1 - band), 3), round(hours * (1 + band), 3)],
        "cost": None if cost is None else round(cost, 2),
        "cost_range": None if cost is None else [round(cost * (1 - band), 2),
                                                 round(cost * (1 + band), 2)],
        "band": band,
    }
