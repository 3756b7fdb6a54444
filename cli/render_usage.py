"""The human view of a run's resource use (``measured["resources"]``, ``reconciler.usage``):
rows for ``output`` and short cells for ``output --compare``, drawn from the same data
``--json`` prints. The data was checked by ``parse_usage``; text from it is escaped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ftspec.spec.text import escape_text


def _mib(value: float) -> str:
    return f"{value / 2**20:.0f} MiB"


def _percent(value: float) -> str:
    return f"{value:.1f}%"


def _watts(value: float) -> str:
    return f"{value:.0f} W"


def _span(span: Any, unit: Callable[[float], str]) -> str | None:
    if not isinstance(span, dict):
        return None
    return f"min {unit(span['min'])} / avg {unit(span['avg'])} / max {unit(span['max'])}"


def usage_rows(res: dict[str, Any]) -> list[tuple[str, Any]]:
    """``output``'s rows: CPU per core, memory, then each GPU (or why there is none)."""
    rows: list[tuple[str, Any]] = []
    cpu = _span(res.get("cpu_utilization_percent"), _percent)
    if cpu:
        cores = res.get("cores")
        rows.append(("cpu_utilization_per_core",
                     cpu + (f" (of {cores} cores)" if cores else "")))
    rss = _span(res.get("rss_bytes"), _mib)
    if rss:
        rows.append(("memory_rss", rss + (f" ({res['samples']} samples)"
                                          if res.get("samples") else "")))
    memory = _span(res.get("memory_utilization_percent"), _percent)
    if memory:
        total = res.get("memory_total_bytes")
        rows.append(("memory_utilization",
                     memory + (f" of {total / 2**30:.1f} GiB" if total else "")))
    gpu = res.get("gpu") or {}
    if gpu.get("unavailable"):
        rows.append(("gpu", "unavailable: " + escape_text(gpu["unavailable"])))
    for device in gpu.get("devices") or []:
        name = f"gpu{device['index']}"
        if device.get("name"):
            rows.append((name, escape_text(device["name"])))
        for key, label, unit in (("compute_utilization_percent", "compute", _percent),
                                 ("memory_used_bytes", "memory", _mib),
                                 ("memory_utilization_percent", "memory_utilization",
                                  _percent),
                                 ("power_watts", "power", _watts)):
            text = _span(device.get(key), unit)
            if text:
                rows.append((f"{name}_{label}", text))
    return rows


USAGE_COLUMNS = ("CPU/CORE AVG", "RSS MAX", "GPU AVG")


def usage_cells(res: dict[str, Any]) -> list[str]:
    """``output --compare``'s cells: the CPU per core's average, the tree's largest RSS,
    and the GPUs' mean compute utilisation (``n/a`` without a GPU)."""
    cpu = res.get("cpu_utilization_percent") or {}
    rss = res.get("rss_bytes") or {}
    gpu = res.get("gpu") or {}
    spans = [d["compute_utilization_percent"]["avg"] for d in gpu.get("devices") or []
             if "compute_utilization_percent" in d]
    gpu_cell = "n/a" if gpu.get("unavailable") else \
        _percent(sum(spans) / len(spans)) if spans else ""
    return [_percent(cpu["avg"]) if "avg" in cpu else "",
            _mib(rss["max"]) if "max" in rss else "", gpu_cell]
