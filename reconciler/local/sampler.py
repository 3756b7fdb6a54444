"""The supervisor's resource sampler: the training process tree's CPU and memory (and each
GPU's, through NVML, where one exists) once a second, summarised as ``reconciler.usage``
defines.

The tree is read from ``/proc`` directly rather than through psutil's per-process objects:
one pass over ``/proc/*/stat`` gives every process's parent, CPU ticks and start time at
once (the tree and its CPU time from the same read), which keeps a sample to one file read
per process. A process that appears or vanishes between reads is skipped for that sample;
a process is known by (pid, start time), so a reused pid never counts another's CPU time.
NVML is used only when ``pynvml`` (the nvidia-ml-py package) is installed: no dependency
is added for machines without a GPU.

The sampler runs in a daemon thread of the supervisor; every read is guarded, so nothing it
does can end or delay the training process, and ``stop`` waits at most a moment for it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ftspec.reconciler.usage import Span

_PROC = Path("/proc")
_TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") or 100)
_PAGE = os.sysconf("SC_PAGE_SIZE") or 4096
PERIOD_S = 1.0
_STOP_WAIT_S = 2.0


def _stat(pid: str) -> tuple[int, int, int] | None:
    """(parent pid, CPU ticks used: user + system, start time) of one process."""
    try:
        raw = (_PROC / pid / "stat").read_bytes()
        rest = raw[raw.rindex(b")") + 2:].split()  # the name may hold spaces and parens
        return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[19])
    except (OSError, ValueError, IndexError):
        return None


def _processes() -> Iterator[tuple[int, tuple[int, int, int]]]:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return
    for name in names:
        if name.isdigit():
            stat = _stat(name)
            if stat is not None:
                yield int(name), stat


def tree(root: int, parents: dict[int, int]) -> set[int]:
    """``root`` and all its descendants, given each process's parent."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), [root] if root in parents else []
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def _rss_bytes(pid: int) -> int | None:
    try:
        return int((_PROC / str(pid) / "statm").read_bytes().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _cores(pid: int) -> int:
    try:
        return len(os.sched_getaffinity(pid)) or 1
    except OSError:
        return os.cpu_count() or 1


def _memory_total() -> int:
    return int(os.sysconf("SC_PHYS_PAGES")) * _PAGE


class _Gpus:
    """Per-device spans through NVML, or why there are none."""

    def __init__(self) -> None:
        self.unavailable: str | None = None
        self.nvml: Any = None
        self.handles: list[Any] = []
        self.spans: list[dict[str, Span]] = []
        self.info: list[dict[str, Any]] = []
        try:
            import pynvml
        except ImportError:
            self.unavailable = "no GPU: NVML's Python binding (nvidia-ml-py) is not installed"
            return
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            for i in range(count):
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                name = pynvml.nvmlDeviceGetName(handle)
                total = pynvml.nvmlDeviceGetMemoryInfo(handle).total
                self.handles.append(handle)
                self.info.append({"index": i, "name": name.decode() if isinstance(
                    name, bytes) else str(name), "memory_total_bytes": int(total)})
                self.spans.append({k: Span() for k in (
                    "compute_utilization_percent", "memory_used_bytes",
                    "memory_utilization_percent", "power_watts")})
        except Exception as exc:  # noqa: BLE001 - NVML's own error classes: no reading
            self.unavailable = f"no GPU: NVML could not be read ({type(exc).__name__}: {exc})"
            self.handles = []
            return
        self.nvml = pynvml
        if not self.handles:
            self.unavailable = "no GPU: NVML sees no device"

    def sample(self, weight: float) -> None:
        for handle, info, spans in zip(self.handles, self.info, self.spans, strict=True):
            try:
                util = self.nvml.nvmlDeviceGetUtilizationRates(handle).gpu
                used = self.nvml.nvmlDeviceGetMemoryInfo(handle).used
                spans["compute_utilization_percent"].add(float(util), weight)
                spans["memory_used_bytes"].add(float(used), weight)
                spans["memory_utilization_percent"].add(
                    100.0 * used / max(1, info["memory_total_bytes"]), weight)
            except Exception:  # noqa: BLE001, S110 - a failed read is skipped, never fatal
                pass
            try:
                milliwatts = self.nvml.nvmlDeviceGetPowerUsage(handle)
                spans["power_watts"].add(milliwatts / 1000.0, weight)
            except Exception:  # noqa: BLE001, S110 - some devices report no power
                pass

    def summary(self) -> dict[str, Any]:
        if self.unavailable is not None:
            return {"unavailable": self.unavailable}
        devices = []
        for info, spans in zip(self.info, self.spans, strict=True):
            device = dict(info)
            for key, span in spans.items():
                got = span.to_json(0 if key == "memory_used_bytes" else 1)
                if got is not None:
                    device[key] = got
            devices.append(device)
        return {"devices": devices}

    def close(self) -> None:
        if self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001, S110 - the supervisor is ending anyway
                pass


class Sampler:
    """Samples ``root``'s process tree every ``period`` seconds in a daemon thread until
    ``stop`` (which returns the summary)."""

    def __init__(self, root: int, period: float = PERIOD_S) -> None:
        self.root, self.period = root, period
        self.cores = _cores(root)
        self.memory_total = _memory_total()
        self.cpu, self.rss, self.memory = Span(), Span(), Span()
        self.samples = 0
        self._ticks: dict[tuple[int, int], int] = {}
        self._last = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ftspec-sampler", daemon=True)
        self._gpus: _Gpus | None = None

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def _loop(self) -> None:
        try:
            self._gpus = _Gpus()
            self.sample(first=True)
            while not self._done.wait(self.period):
                self.sample()
        except Exception:  # noqa: BLE001, S110 - never take the supervisor down
            pass

    def sample(self, first: bool = False) -> None:
        """One reading of the tree: CPU over the time since the last, RSS now."""
        stats = dict(_processes())
        members = tree(self.root, {pid: s[0] for pid, s in stats.items()})
        now = time.monotonic()
        elapsed, self._last = now - self._last, now
        ticks = {(pid, stats[pid][2]): stats[pid][1] for pid in members}
        used = sum(t - self._ticks.get(key, 0) for key, t in ticks.items())
        self._ticks = ticks  # only the live tree: bounded by its size
        if not members:
            return
        rss = sum(r for r in map(_rss_bytes, members) if r is not None)
        if not first and elapsed > 0:
            self.cpu.add(100.0 * used * _TICK_S / elapsed / self.cores, elapsed)
            if self._gpus is not None:
                self._gpus.sample(elapsed)
        weight = elapsed if not first and elapsed > 0 else self.period
        self.rss.add(float(rss), weight)
        self.memory.add(100.0 * rss / max(1, self.memory_total), weight)
        self.samples += 1

    def stop(self) -> dict[str, Any]:
        """Ends sampling (waiting at most a moment) and returns the summary."""
        self._done.set()
        self._thread.join(_STOP_WAIT_S)
        out: dict[str, Any] = {"period_s": self.period, "samples": self.samples,
                               "cores": self.cores, "memory_total_bytes": self.memory_total}
        for key, span, digits in (("cpu_utilization_percent", self.cpu, 1),
                                  ("rss_bytes", self.rss, 0),
                                  ("memory_utilization_percent", self.memory, 2)):
            got = span.to_json(digits)
            if got is not None:
                out[key] = got
        gpus = self._gpus
        out["gpu"] = gpus.summary() if gpus is not None else {
            "unavailable": "no GPU: the sampler did not start"}
        if gpus is not None:
            gpus.close()
        return out
