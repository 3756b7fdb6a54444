"""The throughput model's efficiency per launcher family, fitted on measured runs, and the
leave-one-out error that becomes the plan's uncertainty band.

Each measured run gives one efficiency: its roofline step time (``throughput.predict`` at
efficiency 1, less the communication) over its measured step time. A family's efficiency
is the geometric mean of its runs' (a ratio's natural average). Leave-one-out: each run is
predicted with the efficiency fitted on the other runs of its family, and the error is
predicted / measured tokens/s - 1.

``GPU_EFFICIENCY`` and ``GPU_LOO_ERROR`` are the fit over
``bench/results/gpu_memory-h100-2026-11-24.json`` (Llama 3.2 1B's shapes, one H100,
4 x 2048 tokens a step, bf16: four TRL runs, four torchtune runs), written down by
``bench/throughput.py`` and checked against the recorded file by
``tests/compiler/test_throughput_fit.py``.

``CPU_EFFICIENCY`` and ``CPU_LOO_ERROR`` are the fit over the five CPU runs of
``bench/results/throughput-2026-11-28.json`` (SmolLM2 135M's shapes, fp32, a plain torch
loop on this project's 2-core machine under a load of 7 to 10), each against the matmul and
copy probe taken just before it (``compiler/cpu_peak.py`` probes the same way for ``tune``).
Measured, not a constant of CPUs: another machine, another load or another launcher's loop
reaches another share, and the runs' leave-one-out errors reach 53%.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ftspec.compiler.throughput import Hardware, predict
from ftspec.spec.ir import Job
from ftspec.spec.platforms import LAUNCHER_FACTS

GPU_EFFICIENCY: dict[str, float] = {"hf": 0.3253, "torchtune": 0.3200}
"""Launcher family (``LauncherFacts.memory_profile``) -> share of the roofline reached."""
GPU_LOO_ERROR = 0.11
"""Largest |leave-one-out error| of the GPU fit over its runs (rounded up to a hundredth):
the plan's band is this share either side of its prediction."""
CPU_EFFICIENCY = 0.0859
"""Share of the probed CPU roofline the recorded CPU runs reached (the module docstring)."""
CPU_LOO_ERROR = 0.53
"""Largest |leave-one-out error| of the CPU fit over its runs (rounded up to a hundredth)."""


@dataclass(frozen=True)
class Measured:
    """One run: its family, roofline step seconds (efficiency 1, no communication), the
    communication seconds, tokens per step per device and measured tokens/s per device."""

    case: str
    family: str
    roofline_s: float
    comm_s: float
    tokens: float
    tokens_per_s: float

    @property
    def efficiency(self) -> float:
        return self.roofline_s / (self.tokens / self.tokens_per_s - self.comm_s)


@dataclass(frozen=True)
class Held:
    """A run predicted with the efficiency fitted without it."""

    case: str
    efficiency: float
    predicted: float
    measured: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1


def fit(runs: Sequence[Measured]) -> dict[str, float]:
    """Each family's efficiency: the geometric mean of its runs'."""
    families: dict[str, list[float]] = {}
    for run in runs:
        families.setdefault(run.family, []).append(math.log(run.efficiency))
    return {f: math.exp(sum(v) / len(v)) for f, v in sorted(families.items())}


def leave_one_out(runs: Sequence[Measured]) -> list[Held]:
    """Each run predicted from the others of its family (none when it is its family's only
    run: nothing is left to fit on)."""
    held: list[Held] = []
    for i, run in enumerate(runs):
        rest = [r for j, r in enumerate(runs) if j != i and r.family == run.family]
        if not rest:
            continue
        eff = fit(rest)[run.family]
        predicted = run.tokens / (run.roofline_s / eff + run.comm_s)
        held.append(Held(run.case, eff, predicted, run.tokens_per_s))
    return held


def efficiency_for(family: str) -> float:
    """The fitted GPU efficiency of a launcher family; an unmeasured family gets the
    geometric mean of the measured ones."""
    if family in GPU_EFFICIENCY:
        return GPU_EFFICIENCY[family]
    values = list(GPU_EFFICIENCY.values())
    return math.exp(sum(math.log(v) for v in values) / len(values))


def measured_run(case: str, job: Job, hardware: Hardware, tokens_per_s: float) -> Measured:
    """A recorded run of ``job`` on ``hardware`` at ``tokens_per_s`` per device, as the fit
    takes it."""
    roofline = predict(job, hardware, 1.0)
    return Measured(case, LAUNCHER_FACTS[job.launcher].memory_profile,
                    max(roofline.compute_s, roofline.memory_s) + roofline.adapter_s,
                    roofline.comm_s,
                    job.tokens_per_step / max(job.world_size, 1), tokens_per_s)
