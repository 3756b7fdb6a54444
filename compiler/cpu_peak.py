"""This machine's CPU peak, which the throughput model needs to price a CPU job.

The catalog has a peak for each GPU it knows (the vendor's figures); a CPU has none that
means anything for torch, so it is measured: a matmul probe (the best of a few square
matmuls in the job's dtype, FLOP/s) and a copy probe (the best of a few 256 MiB copies,
bytes/s), about two seconds. ``bench/throughput.py`` fits the CPU efficiency against the
same probe, so the model's figures and its fit see the CPU alike.

The measured peak is kept per machine and dtype in ``$FTSPEC_CACHE_DIR/cpu-peak`` (one
private JSON file, written and read through ``compiler.cache_files``): a later ``tune`` of
a CPU spec reads it instead of probing again. The key names what the probe depends on: the
host, the CPU model, the cores this process may use, the torch version and the dtype.

A probe is a burst of a second or two: on a loaded machine it measures what the process
got then, not what a run of minutes will get. The choice between settings depends on the
peak only through the ratio of compute to memory traffic; the figures in tokens/s depend on
it directly.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal

from ftspec.compiler import cache, cache_files
from ftspec.compiler.throughput import Hardware
from ftspec.spec.dtypes import TORCH_NAMES

Source = Literal["probe", "cache", "given"]
KIND = "cpu-peak"
"""The cache folder's kind (``compiler.cache.folder``)."""


@dataclass(frozen=True)
class CpuPeak:
    """Peak FLOP/s in ``dtype`` and memory bytes/s of this machine's CPU, and where the
    figures came from (a probe now, the cache of an earlier probe, or the user)."""

    flops: float
    memory_bps: float
    dtype: str
    source: Source
    measured_at: str = ""
    """When the probe ran (UTC, ISO 8601); empty for a given peak."""

    def hardware(self) -> Hardware:
        """As the throughput model takes it: one device, no link to others."""
        return Hardware(self.flops, self.memory_bps, 1.0, f"cpu ({self.dtype})")

    def describe(self) -> str:
        """``21.3 GFLOP/s fp32, 4.9 GB/s (probe of this machine, 2026-11-28T23:01Z)``."""
        where = {"probe": "probe of this machine", "cache": "cached probe of this machine",
                 "given": "given by --cpu-peak"}[self.source]
        when = f", {self.measured_at}" if self.measured_at else ""
        return (f"{self.flops / 1e9:.1f} GFLOP/s {self.dtype}, {self.memory_bps / 1e9:.1f} GB/s "
                f"({where}{when})")


def probe(dtype: str) -> tuple[float, float]:
    """(peak FLOP/s in ``dtype``, memory bytes/s) of this machine's torch: the best of a few
    square matmuls and of a few 256 MiB fp32 copies."""
    import torch

    kind = getattr(torch, TORCH_NAMES[dtype])
    best = 0.0
    for n in (512, 1024, 2048):
        a, b = torch.randn(n, n, dtype=kind), torch.randn(n, n, dtype=kind)
        a @ b
        for _ in range(3):
            start = time.perf_counter()
            a @ b
            best = max(best, 2 * n**3 / (time.perf_counter() - start))
    src = torch.empty(1 << 26, dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    bw = 0.0
    for _ in range(5):
        start = time.perf_counter()
        dst.copy_(src)
        bw = max(bw, 2 * src.numel() * 4 / (time.perf_counter() - start))
    return best, bw


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_key(dtype: str) -> str:
    """The cache entry's name for this machine and ``dtype``."""
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = ""
    parts = {"host": platform.node(), "cpu": _cpu_model(), "cores": _cores(),
             "torch": torch_version, "dtype": dtype}
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]
    return f"{digest}.json"


def _from_entry(entry: dict[str, Any], dtype: str) -> CpuPeak | None:
    flops, bps, when = entry.get("flops"), entry.get("memory_bps"), entry.get("measured_at")
    if (entry.get("dtype") != dtype or not isinstance(when, str)
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                       and math.isfinite(v) and v > 0 for v in (flops, bps))):
        return None
    return CpuPeak(float(flops), float(bps), dtype, "cache", when)  # type: ignore[arg-type]


def measured_peak(dtype: str, fresh: bool = False,
                  measure: Callable[[str], tuple[float, float]] | None = None) -> CpuPeak:
    """This machine's peak in ``dtype``: the cached probe when there is one (and not
    ``fresh``), else ``measure`` now, kept for the next time (when the cache folder is safe)."""
    folder = cache.folder(KIND)
    name = machine_key(dtype)
    entry = None if fresh else cache_files.read_json_entry(folder, name)
    kept = None if entry is None else _from_entry(entry, dtype)
    if kept is not None:
        return kept
    flops, bps = (measure or probe)(dtype)
    when = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    where = cache_files.safe_folder(folder, create=True)
    if where is not None:
        data = {"flops": flops, "memory_bps": bps, "dtype": dtype, "measured_at": when}
        try:
            cache_files.write_new(where, name, json.dumps(data).encode())
        except OSError:
            pass  # the peak is still good for this run; the next one probes again
    return CpuPeak(flops, bps, dtype, "probe", when)
