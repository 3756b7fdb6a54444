"""A run's resource use as the SFTTrainer seed measures it (pure: numbers in, dict out).

The local supervisor (``local/sampler.py``) samples the training process tree once a second
and keeps, per figure, a running ``Span`` (min / time-weighted avg / max: four numbers, never
the list of samples). Its summary (``usage.json`` beside ``exit.json``) holds:

- ``cpu_utilization_percent``: the tree's CPU seconds per wall second, divided by the cores
  the training process may run on (its affinity), as a percentage (100: every allowed core
  busy).
- ``rss_bytes``: the tree's resident set (processes' RSS summed, so pages shared by forked
  workers count once per process), and ``memory_utilization_percent``: that over the
  machine's memory (``memory_total_bytes``).
- ``gpu``: per device NVML sees, ``compute_utilization_percent``, ``memory_used_bytes``,
  ``memory_utilization_percent`` and ``power_watts`` (device-wide: NVML counts every process
  on the device); or ``{"unavailable": "no GPU: <why>"}``.

The summary is read back from the run folder, so ``parse_usage`` trusts nothing in it: each
field must have its type and bounds, or it is dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

_MAX_BYTES = float(1 << 60)
_MAX_PERCENT = 100_000.0  # a tree may briefly outrun its affinity's count (hyperthreads, timing)
_MAX_WATTS = 100_000.0
_MAX_DEVICES = 64
_MAX_TEXT = 200
_TOLERANCE = 1e-6


@dataclass
class Span:
    """min / time-weighted mean / max of a figure over a run, in constant memory."""

    low: float = math.inf
    high: float = -math.inf
    weighted: float = 0.0
    weight: float = 0.0

    def add(self, value: float, weight: float = 1.0) -> None:
        """One sample held for ``weight`` seconds; a non-finite value or weight is skipped."""
        if not (math.isfinite(value) and math.isfinite(weight)) or weight <= 0:
            return
        self.low, self.high = min(self.low, value), max(self.high, value)
        self.weighted += value * weight
        self.weight += weight

    def to_json(self, digits: int = 1) -> dict[str, float] | None:
        """Rounded to ``digits`` (whole numbers, such as bytes, as ints at 0); None
        without a sample."""
        if self.weight <= 0:
            return None
        avg = min(max(self.weighted / self.weight, self.low), self.high)
        values = {"min": self.low, "avg": avg, "max": self.high}
        return {k: round(v) if digits == 0 else round(v, digits) for k, v in values.items()}


def _finite(value: Any, high: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) and 0 <= value <= high else None  # an int stays one


def _count(value: Any, high: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= high else None


def _text(value: Any) -> str | None:
    return value[:_MAX_TEXT] if isinstance(value, str) and value else None


def _span(value: Any, high: float) -> dict[str, float] | None:
    """``{"min", "avg", "max"}`` in ``[0, high]`` with min <= avg <= max, else None."""
    if not isinstance(value, dict):
        return None
    got = {k: _finite(value.get(k), high) for k in ("min", "avg", "max")}
    low, avg, top = got["min"], got["avg"], got["max"]
    if low is None or avg is None or top is None:
        return None
    if not low - _TOLERANCE <= avg <= top + _TOLERANCE:
        return None
    return {"min": low, "avg": avg, "max": top}


_TOP_SPANS = {"cpu_utilization_percent": _MAX_PERCENT, "rss_bytes": _MAX_BYTES,
              "memory_utilization_percent": _MAX_PERCENT}
_GPU_SPANS = {"compute_utilization_percent": 100.0 + _TOLERANCE,
              "memory_used_bytes": _MAX_BYTES,
              "memory_utilization_percent": 100.0 + _TOLERANCE, "power_watts": _MAX_WATTS}


def _device(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    index = _count(value.get("index"), _MAX_DEVICES)
    if index is None:
        return None
    out: dict[str, Any] = {"index": index}
    name = _text(value.get("name"))
    if name:
        out["name"] = name
    total = _finite(value.get("memory_total_bytes"), _MAX_BYTES)
    if total is not None:
        out["memory_total_bytes"] = int(total)
    for key, high in _GPU_SPANS.items():
        span = _span(value.get(key), high)
        if span is not None:
            out[key] = span
    return out


def _gpu(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    why = _text(value.get("unavailable"))
    if why is not None:
        return {"unavailable": why}
    devices = value.get("devices")
    if not isinstance(devices, list) or not devices or len(devices) > _MAX_DEVICES:
        return None
    parsed = [d for d in map(_device, devices) if d is not None]
    return {"devices": parsed} if parsed else None


def parse_usage(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """The checked summary (only the fields that pass their type and bound checks), or None
    when nothing in ``data`` does."""
    if not isinstance(data, dict):
        return None
    out: dict[str, Any] = {}
    for key, high in _TOP_SPANS.items():
        span = _span(data.get(key), high)
        if span is not None:
            out[key] = span
    if not out and _gpu(data.get("gpu")) is None:
        return None
    for key, check in (("samples", lambda v: _count(v, 1 << 40)),
                       ("cores", lambda v: _count(v, 1 << 20)),
                       ("memory_total_bytes", lambda v: _count(v, 1 << 60)),
                       ("period_s", lambda v: _finite(v, 3600.0))):
        value = check(data.get(key))
        if value is not None:
            out[key] = value
    gpu = _gpu(data.get("gpu"))
    if gpu is not None:
        out["gpu"] = gpu
    return out
