"""Wall time and peak memory of real training runs (the e2e tests report them).

Peak memory is the largest summed RSS of a process tree, sampled every 0.1 s with psutil
(``getrusage(RUSAGE_CHILDREN)`` would miss runs that are not our children, such as detached
local-backend runs). Each measured run is printed and merged into
``<repo>/.ftspec/e2e-metrics.json`` so a session can report the figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Self

import psutil

REPO = Path(__file__).resolve().parents[2]
METRICS_FILE = REPO / ".ftspec" / "e2e-metrics.json"


@dataclass
class Measurement:
    name: str
    command: str
    wall_s: float = 0.0
    peak_rss_mib: float = 0.0
    max_processes: int = 0
    ranks: list[tuple[str, str]] = field(default_factory=list)
    """(RANK, WORLD_SIZE) of every process seen with those variables (torchrun workers)."""


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


class TreeSampler:
    """Samples the process trees under ``roots()`` in a thread until ``stop()``."""

    def __init__(self, m: Measurement, roots: Callable[[], list[int]]) -> None:
        self.m = m
        self.roots = roots
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._ranks: set[tuple[str, str]] = set()

    def _run(self) -> None:
        while not self._stop.is_set():
            procs = {p.pid: p for root in self.roots() for p in _tree(root)}
            total = 0
            for p in procs.values():
                try:
                    total += p.memory_info().rss
                    env = p.environ()
                except psutil.Error:
                    continue
                if "RANK" in env and "WORLD_SIZE" in env:
                    self._ranks.add((env["RANK"], env["WORLD_SIZE"]))
            self.m.peak_rss_mib = max(self.m.peak_rss_mib, total / 2**20)
            self.m.max_processes = max(self.m.max_processes, len(procs))
            self._stop.wait(0.1)

    def __enter__(self) -> Self:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.m.wall_s = time.monotonic() - self._start
        self.m.ranks = sorted(self._ranks)
        record(self.m)


def record(m: Measurement) -> None:
    print(f"\n[e2e] {m.name}: wall {m.wall_s:.1f} s, peak RSS {m.peak_rss_mib:.0f} MiB, "
          f"{m.max_processes} processes at most; command: {m.command}")
    METRICS_FILE.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(METRICS_FILE.read_text())
    except (OSError, ValueError):
        data = {}
    data[m.name] = {**asdict(m), "wall_s": round(m.wall_s, 2),
                    "peak_rss_mib": round(m.peak_rss_mib, 1), "at": time.time()}
    tmp = METRICS_FILE.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, METRICS_FILE)


@dataclass
class Completed:
    returncode: int
    output: str
    m: Measurement


def run_measured(name: str, cmd: list[str], *, cwd: Path, env: Mapping[str, str],
                 timeout_s: float = 600.0) -> Completed:
    """Run ``cmd`` to its end, measuring its whole process tree."""
    m = Measurement(name, " ".join(cmd))
    proc = subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.extend(proc.stdout or []), daemon=True)
    reader.start()
    with TreeSampler(m, lambda: [proc.pid]):
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    reader.join()
    return Completed(proc.returncode, "".join(chunks), m)
