"""Predicted wall time, device-hours and cost of a compiled job, with an uncertainty band.

    wall = startup + steps x step_s (``compiler/throughput.py``) + saves x save_s

- ``startup``: process start, model load and the first steps' warm-up (kernel selection,
  allocator growth): ``STARTUP_S`` plus the weights read at ``LOAD_GBPS``;
- ``saves``: the checkpoints ``training.checkpointing`` asks for (one per epoch, or every
  ``steps`` steps) and the final model, each the trainable parameters with two optimizer
  moments written at ``SAVE_GBPS``;
- device-hours: wall x the job's devices; cost: device-hours x the user's price for the
  accelerator (``compiler/pricing.py``; ftspec ships no prices);
- band: the throughput fit's largest leave-one-out error (``GPU_LOO_ERROR``) either side of
  every figure. It only covers conditions like the measured ones (one H100, a 1B model);
  multi-GPU, other accelerators and other model sizes are extrapolations.

A CPU job, or an accelerator whose peak is not in the catalog, gets no estimate and a reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ftspec.compiler.memory import load_bytes, trainable_params
from ftspec.compiler.throughput import Prediction, hardware_of, predict
from ftspec.compiler.throughput_fit import GPU_LOO_ERROR, efficiency_for
from ftspec.spec.catalog.accelerators import ACCELERATORS
from ftspec.spec.ir import Job
from ftspec.spec.platforms import LAUNCHER_FACTS

STARTUP_S = 30.0
"""Seconds before the first timed step: the recorded H100 runs' wall time (from ``ftspec
apply``) less their steps at the measured pace was 18 to 49 s (torchtune 18 to 25, TRL 39
to 49; a 1B model read from a local disk)."""
LOAD_GBPS = 1.0
"""GB/s the weights are read at (a local SSD or a network volume): an assumption."""
SAVE_GBPS = 1.0
"""GB/s a checkpoint is written at: an assumption."""


@dataclass(frozen=True)
class TimeEstimate:
    seconds: float
    startup_s: float
    train_s: float
    saves_s: float
    steps: int
    saves: int
    devices: int
    accelerator: str
    band: float
    """Relative half-width of the band (0.11: 11% either side)."""
    throughput: Prediction
    price_per_device_hour: float | None = None

    @property
    def device_hours(self) -> float:
        return self.seconds * self.devices / 3600

    @property
    def cost(self) -> float | None:
        if self.price_per_device_hour is None:
            return None
        return self.device_hours * self.price_per_device_hour

    def low(self, value: float) -> float:
        return value * (1 - self.band)

    def high(self, value: float) -> float:
        return value * (1 + self.band)

    def to_json(self) -> dict[str, Any]:
        cost = self.cost
        return {
            "seconds": round(self.seconds, 1),
            "seconds_range": [round(self.low(self.seconds), 1),
                              round(self.high(self.seconds), 1)],
            "device_hours": round(self.device_hours, 3),
            "device_hours_range": [round(self.low(self.device_hours), 3),
                                   round(self.high(self.device_hours), 3)],
            "cost": None if cost is None else round(cost, 2),
            "cost_range": None if cost is None else [round(self.low(cost), 2),
                                                     round(self.high(cost), 2)],
            "price_per_device_hour": self.price_per_device_hour,
            "devices": self.devices,
            "accelerator": self.accelerator,
            "steps": self.steps,
            "terms": {
                "startup_s": round(self.startup_s, 1),
                "train_s": round(self.train_s, 1),
                "saves_s": round(self.saves_s, 1),
                "saves": self.saves,
                "step_s": round(self.throughput.step_s, 4),
                "tokens_per_s_per_device": round(self.throughput.tokens_per_s, 1),
                "compute_s": round(self.throughput.compute_s, 4),
                "memory_s": round(self.throughput.memory_s, 4),
                "adapter_s": round(self.throughput.adapter_s, 4),
                "comm_s": round(self.throughput.comm_s, 4),
                "efficiency": self.throughput.efficiency,
                "flops_per_token": round(self.throughput.flops.total),
            },
            "band": self.band,
        }


def _saves(job: Job) -> int:
    ckpt = job.spec.training.checkpointing
    steps = job.total_steps or 0
    if ckpt.strategy == "steps" and ckpt.steps:
        middle = int(steps // ckpt.steps)
    elif ckpt.strategy == "epoch":
        middle = int(job.spec.training.epochs or 1)
    else:
        middle = 0
    return middle + 1


def throughput_of(job: Job) -> Prediction | None:
    """The job's predicted throughput on its accelerator at its launcher's fitted
    efficiency (None where ``hardware_of`` has no peak)."""
    hardware = hardware_of(job)
    if hardware is None:
        return None
    return predict(job, hardware, efficiency_for(LAUNCHER_FACTS[job.launcher].memory_profile))


def estimate_time(job: Job, prices: Mapping[str, float] | None = None
                  ) -> tuple[TimeEstimate | None, str]:
    """The job's time and cost, or None and why none is predicted."""
    if job.device != "cuda":
        return None, "a CPU run: the catalog has no CPU peak (bench/throughput.py measures one)"
    hardware = hardware_of(job)
    acc = job.spec.resources.accelerator
    if hardware is None or acc is None:
        if acc is None:
            return None, "no resources.accelerator: no peak to predict from"
        return None, f"the catalog has no published peak for {acc}"
    pred = throughput_of(job)
    if job.total_steps is None or pred is None:
        return None, "the number of steps is unknown (the dataset's size is not known)"
    weight = load_bytes(job.spec)
    startup = STARTUP_S + job.model.params_b * 1e9 * weight / (LOAD_GBPS * 1e9)
    saves = _saves(job)
    saved = trainable_params(job.spec, job.model, job.lora_modules) * 3 * weight
    saves_s = saves * saved / (SAVE_GBPS * 1e9)
    train = job.total_steps * pred.step_s
    devices = max(job.total_gpus, 1)
    price = prices.get(acc) if prices else None
    return TimeEstimate(startup + train + saves_s, startup, train, saves_s, job.total_steps,
                        saves, devices, acc, GPU_LOO_ERROR, pred, price), ""


def duration(seconds: float, like: float | None = None) -> str:
    """``42 min``, ``3.5 h``, ``40 s``: the unit chosen by ``like`` when given (a band's
    ends in its centre's unit)."""
    scale = seconds if like is None else like
    if scale < 90:
        return f"{seconds:.0f} s"
    if scale < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def band_text(seconds: float, band: float) -> str:
    """``~46 min (41–51 min)``."""
    low, high = duration(seconds * (1 - band), seconds), duration(seconds * (1 + band), seconds)
    return f"~{duration(seconds)} ({low.split()[0]}–{high})"


def short_line(estimates: list[TimeEstimate]) -> str:
    """One line for the plan: ``time: ~42 min (37–47 min) on 8x NVIDIA H100 80GB, 5.6
    device-hours``; several jobs (a sweep) summed, run one after another."""
    seconds = sum(e.seconds for e in estimates)
    hours = sum(e.device_hours for e in estimates)
    band = max(e.band for e in estimates)
    accs = sorted({(e.devices, e.accelerator) for e in estimates})
    where = ", ".join(f"{n}x {ACCELERATORS[a].display}" for n, a in accs)
    runs = f" for {len(estimates)} runs in turn" if len(estimates) > 1 else ""
    line = f"time: {band_text(seconds, band)}{runs} on {where}, {hours:.2g} device-hours"
    costs = [e.cost for e in estimates]
    if costs and all(c is not None for c in costs):
        cost = sum(c for c in costs if c is not None)
        line += f", cost ~{cost:.2f} ({cost * (1 - band):.2f}–{cost * (1 + band):.2f})"
    return line
