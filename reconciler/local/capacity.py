"""How many points of a local sweep this machine holds at once: ``sweep.max_parallel``'s
default.

A CPU point needs its processes' memory (the Job's estimate per process, which counts the
runtime's own overhead) and a core per process; a GPU point needs its GPUs. The default is
the smallest of what the memory, the cores (GPUs) and the number of points allow, at least
1. The machine is read as a whole (total memory, the cores this process may run on, the
NVIDIA devices), not what is free right now, so the same spec plans the same on one machine
and a saved plan stays bound to it.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from ftspec.spec.ir import Job

GIB = 1024 ** 3


@dataclass(frozen=True)
class Machine:
    memory_bytes: int
    cores: int
    gpus: int

    @classmethod
    def here(cls) -> Machine:
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            memory = 0
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        return cls(max(0, memory), max(1, cores), len(glob.glob("/dev/nvidia[0-9]*")))


@dataclass(frozen=True)
class Parallel:
    """The default and why: ``2 cores, 1 process a point; memory for 30: 0.8 GiB a point of
    23.5 GiB``."""

    limit: int
    why: str


def default_parallel(job: Job, points: int, machine: Machine) -> Parallel:
    procs = max(1, job.procs_per_node * job.nodes)
    if job.device == "cuda":
        per = max(1, job.total_gpus)
        by_device = machine.gpus // per
        device = f"{machine.gpus} GPUs, {per} a point"
    else:
        by_device = machine.cores // procs
        device = f"{machine.cores} cores, {procs} process{'es' if procs > 1 else ''} a point"
    need = job.memory.total_gib * procs * GIB
    limits = [by_device, points]
    memory = ""
    if job.device == "cpu" and need > 0 and machine.memory_bytes > 0:
        by_memory = int(machine.memory_bytes // need)
        limits.append(by_memory)
        memory = (f"; memory for {by_memory}: {_gib(need)} a point of "
                  f"{_gib(machine.memory_bytes)}")
    return Parallel(max(1, min(limits)), f"{device}{memory}")


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"
