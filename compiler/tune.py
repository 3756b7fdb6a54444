"""The fastest settings that fit: ``ftspec tune``'s search (the command prints and writes).

Searched: only settings that leave what is learned as it is —

- ``training.micro_batch_size`` x ``training.gradient_accumulation_steps`` at the written
  global batch (micro x accumulation x world size = global batch, exactly);
- ``training.gradient_checkpointing`` on and off;
- ``distributed.strategy`` between ``ddp`` and ``fsdp`` when the job runs on more than one
  device with one of them (the same optimizer step, sharded or replicated).

Not searched: CPU offload (the throughput model does not price the transfers it adds, so
it could only ever look free or useless) and packing (it changes the batches' contents).

Each candidate is the spec with its values as ``--set`` overrides, compiled through the
one compile path (``compiler.pipeline``) to the spec's target's artifacts: its memory
estimate and every rule (the launcher's too: torchtune's distributed recipes refuse DDP)
are the real ones, and a candidate the rules refuse is listed with their first error. A candidate fits
when the estimate leaves ``margin`` of the device's memory free; its speed is
``compiler.time_cost.throughput_of`` (tokens/s per device). The choice is the fastest that
fits (of equally fast ones, the fewest changes: ``TIE``), kept only when it beats the spec
as written by ``MIN_GAIN``.

A CPU job (``deploy.target: local``, one process) is priced on this machine's CPU: its peak
from ``compiler/cpu_peak.py`` (a probe, its cache, or the user's figures), the CPU efficiency
of ``compiler/throughput_fit.py``, and this machine's memory as the capacity (the caller
reads it). The efficiency scales every candidate alike, so the choice does not depend on
it; the tokens/s do, and the overlay says how far they are to be trusted.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

from ftspec.compiler.cpu_peak import CpuPeak
from ftspec.compiler.pipeline import SpecInput, compile_spec
from ftspec.compiler.throughput import Prediction, predict
from ftspec.compiler.throughput_fit import CPU_EFFICIENCY, CPU_LOO_ERROR, GPU_LOO_ERROR
from ftspec.compiler.time_cost import estimate_time, throughput_of
from ftspec.spec.diagnostics import format_path
from ftspec.spec.ir import Job

MIN_GAIN = 0.01
"""Relative gain below which the written spec is kept: the model's band is ~11%, a gain
of a fraction of a percent is no reason to change a spec."""
TIE = 0.001
"""Candidates within this share of the fastest are equally fast: of those the one with the
fewest changes to the written spec is chosen, then the one with the least memory. On a CPU
the largest micro batch comes first: the model prices no fixed cost per micro-batch (Python,
kernel launches), and on this project's CPU the tiny example ran several times faster at
micro batch 4 x 1 than at 1 x 4, which the model predicts equally fast
(``bench/results/tune-2026-11-28.md``)."""
SHARDABLE = ("ddp", "fsdp")


@dataclass(frozen=True)
class Setting:
    micro_batch_size: int
    gradient_accumulation_steps: int
    gradient_checkpointing: bool
    strategy: str
    """The resolved ``distributed.strategy``."""

    def sets(self, written: Setting) -> tuple[str, ...]:
        """The ``--set`` values that make the written spec this setting (the batch pair
        always: together they keep the global batch)."""
        out = [f"training.micro_batch_size={self.micro_batch_size}",
               f"training.gradient_accumulation_steps={self.gradient_accumulation_steps}"]
        if self.gradient_checkpointing != written.gradient_checkpointing:
            out.append(f"training.gradient_checkpointing={str(self.gradient_checkpointing).lower()}")
        if self.strategy != written.strategy:
            out.append(f"distributed.strategy={self.strategy}")
        return tuple(out)


@dataclass(frozen=True)
class Candidate:
    setting: Setting
    tokens_per_s: float | None
    """Predicted per device; None when the candidate does not compile."""
    memory_gib: float | None
    fits: bool
    refused: str = ""
    """The compile path's first error, when it refused the candidate."""

    def to_json(self) -> dict[str, Any]:
        s = self.setting
        return {"micro_batch_size": s.micro_batch_size,
                "gradient_accumulation_steps": s.gradient_accumulation_steps,
                "gradient_checkpointing": s.gradient_checkpointing, "strategy": s.strategy,
                "fits": self.fits, "memory_gib": self.memory_gib,
                "tokens_per_s_per_device": (None if self.tokens_per_s is None
                                            else round(self.tokens_per_s, 1)),
                "refused": self.refused or None}


@dataclass(frozen=True)
class Tuned:
    written: Candidate
    candidates: tuple[Candidate, ...]
    choice: Candidate | None
    """The fastest candidate that fits, when it beats ``written`` by ``MIN_GAIN``."""
    limit_gib: float
    capacity_gib: float
    margin: float
    world_size: int
    global_batch_size: int
    cpu: CpuPeak | None = None
    """The CPU peak the candidates were priced on (None: the accelerator's, from the catalog)."""

    @property
    def gain(self) -> float:
        if self.choice is None or not self.written.tokens_per_s:
            return 0.0
        return (self.choice.tokens_per_s or 0.0) / self.written.tokens_per_s - 1

    def lookup(self, setting: Setting) -> Candidate | None:
        return next((c for c in self.candidates if c.setting == setting), None)


def _changes(setting: Setting, written: Setting) -> int:
    return ((setting.micro_batch_size != written.micro_batch_size)
            + (setting.gradient_checkpointing != written.gradient_checkpointing)
            + (setting.strategy != written.strategy))


def setting_of(job: Job) -> Setting:
    return Setting(job.micro_batch_size, job.gradient_accumulation_steps,
                   job.spec.training.gradient_checkpointing, job.strategy)


def settings(job: Job) -> list[Setting]:
    """Every setting searched for ``job`` (the written one included)."""
    written = setting_of(job)
    world = max(job.world_size, 1)
    per_device, rest = divmod(job.global_batch_size, world)
    pairs = ([(m, per_device // m) for m in range(1, per_device + 1) if per_device % m == 0]
             if not rest else [(written.micro_batch_size, written.gradient_accumulation_steps)])
    strategies = (list(SHARDABLE) if world > 1 and written.strategy in SHARDABLE
                  else [written.strategy])
    out = [Setting(m, a, ckpt, st)
           for (m, a), ckpt, st in itertools.product(pairs, (True, False), strategies)]
    return out if written in out else [written, *out]


def speed(job: Job, cpu: CpuPeak | None) -> Prediction | None:
    """``job``'s predicted throughput: on its accelerator (the catalog's peak), or for a CPU
    job on ``cpu`` at the CPU efficiency (None without one)."""
    if job.device == "cuda":
        return throughput_of(job)
    return None if cpu is None else predict(job, cpu.hardware(), CPU_EFFICIENCY)


def cpu_refusal(job: Job) -> str | None:
    """Why a CPU ``job`` cannot be priced on this machine's CPU (None: it can, or it is no
    CPU job). Asked before the probe: nothing is measured for a job that runs elsewhere."""
    if job.device == "cuda":
        return None
    if job.spec.deploy.target != "local":
        return (f"a CPU run on deploy.target {job.spec.deploy.target}: the CPU peak is "
                "measured on this machine, not where the job runs")
    if job.world_size > 1:
        return (f"a CPU run of {job.world_size} processes: the CPU probe measures one "
                "process with every core")
    return None


def unpredicted(job: Job, cpu: CpuPeak | None = None,
                cpu_capacity_gib: float | None = None) -> str | None:
    """Why ``job`` has no throughput to tune for, or None when it has one (a CPU job with
    ``cpu``, its peak, and ``cpu_capacity_gib``, this machine's memory per process)."""
    if job.device != "cuda":
        refused = cpu_refusal(job)
        if refused is not None:
            return refused
        if cpu is None:
            return "a CPU run: no CPU peak (tune probes this machine, or give --cpu-peak)"
        return None if cpu_capacity_gib else "this machine's memory is unknown: no fit to check"
    if throughput_of(job) is not None and job.memory.capacity_gib is not None:
        return None
    if job.memory.capacity_gib is None and job.device == "cuda":
        return "the accelerator's memory is unknown: no fit to check"
    return str(estimate_time(job)[1])


def evaluate(source: SpecInput, job: Job, setting: Setting, limit_gib: float,
             cpu: CpuPeak | None = None) -> Candidate:
    """``setting`` compiled over ``source`` through the compile path."""
    sets = (*source.sets, *setting.sets(setting_of(job)))
    result = compile_spec(replace(source, sets=sets), "artifacts")
    errors = [d for d in result.diagnostics if d.is_error]
    if errors or result.job is None:
        first = errors[0] if errors else None
        why = ("does not compile" if first is None
               else f"{format_path(first.path)}: {first.summary}" if first.path
               else first.summary)
        return Candidate(setting, None, None, False, why)
    mem = result.job.memory.total_gib
    pred = speed(result.job, cpu)
    return Candidate(setting, None if pred is None else pred.tokens_per_s, round(mem, 2),
                     mem <= limit_gib)


def tune(source: SpecInput, job: Job, margin: float, cpu: CpuPeak | None = None,
         cpu_capacity_gib: float | None = None) -> Tuned:
    """Search ``job``'s settings (compiled from ``source``); ``unpredicted(job, cpu,
    cpu_capacity_gib)`` must be None."""
    capacity = job.memory.capacity_gib if job.device == "cuda" else cpu_capacity_gib
    assert capacity is not None
    cpu = None if job.device == "cuda" else cpu
    limit = capacity * (1 - margin)
    written = setting_of(job)
    cands = tuple(evaluate(source, job, s, limit, cpu) for s in settings(job))
    base = next(c for c in cands if c.setting == written)
    fitting = [c for c in cands if c.fits and c.tokens_per_s is not None]
    top = max((c.tokens_per_s or 0.0 for c in fitting), default=0.0)
    ties = [c for c in fitting if (c.tokens_per_s or 0.0) >= top * (1 - TIE)]
    best = min(ties, key=lambda c: (-c.setting.micro_batch_size if cpu else 0,
                                    _changes(c.setting, written), c.memory_gib or 0.0),
               default=None)
    floor = (base.tokens_per_s or 0.0) * (1 + MIN_GAIN)
    choice = (best if best is not None and best.setting != written
              and (best.tokens_per_s or 0.0) > floor else None)
    return Tuned(base, cands, choice, round(limit, 2), round(capacity, 2), margin,
                 max(job.world_size, 1), job.global_batch_size, cpu)


def _why(tuned: Tuned, field: str, chosen: str, written: str, reverted: Setting) -> str:
    """``field``'s chosen value against the written one, the other values as chosen."""
    if chosen == written:
        return f"{field} {chosen}: kept as written"
    other = tuned.lookup(reverted)
    mine = tuned.choice.tokens_per_s if tuned.choice else None
    if other is None or other.tokens_per_s is None:
        against = "the written value does not compile with the other choices"
    elif not other.fits:
        against = "the written value does not fit with the other choices"
    else:
        against = f"{other.tokens_per_s:,.0f} with it"
    return f"{field} {chosen} (written {written}): {mine or 0:,.0f} tokens/s, {against}"


def gpu_trust() -> str:
    return (f"# The throughput model's band is about {100 * GPU_LOO_ERROR:.0f}%: measure before"
            " relying on the gain.")


def cpu_trust(cpu: CpuPeak) -> list[str]:
    """The overlay's comment lines on where the CPU figures come from and how far to trust
    them."""
    return [
        f"# CPU figures: peak {cpu.describe()},",
        f"#   CPU efficiency {CPU_EFFICIENCY} (fitted on five CPU runs of a loaded 2-core machine,",
        f"#   leave-one-out errors up to {100 * CPU_LOO_ERROR:.0f}%): the tokens/s are rough. The efficiency",
        "#   scales every candidate alike; the ranking depends on the probe only through",
        "#   compute against memory traffic. The model prices no fixed cost per micro-batch",
        "#   (Python, kernel launches), which on a small model favours larger micro batches",
        "#   more than it says. Measure before relying on the gain.",
    ]


def overlay_text(tuned: Tuned, spec_name: str) -> str:
    """The overlay for ``tuned.choice``, with a comment header: the predicted gain and why
    each value was chosen."""
    choice, base = tuned.choice, tuned.written
    assert choice is not None
    c, w = choice.setting, base.setting
    gain = f"+{100 * tuned.gain:.1f}%"
    head = [
        f"# ftspec tune {spec_name}: {gain} predicted tokens/s per device,",
        f"#   {base.tokens_per_s or 0:,.0f} as written -> {choice.tokens_per_s or 0:,.0f}.",
        (f"# Memory estimate {choice.memory_gib} GiB of {tuned.capacity_gib:g} GiB"
         + (" (this machine's memory)" if tuned.cpu else "")),
        f"#   (limit {tuned.limit_gib} GiB: {100 * tuned.margin:g}% left free).",
        (f"# Global batch kept: micro {c.micro_batch_size} x {c.gradient_accumulation_steps}"
         f" accumulated x {tuned.world_size} devices = {tuned.global_batch_size}."),
        "# Learning rate, data and method are not touched.",
        *(cpu_trust(tuned.cpu) if tuned.cpu else [gpu_trust()]),
        "# Why each value:",
        "#   " + _why(tuned, "micro batch x accumulation",
                      f"{c.micro_batch_size} x {c.gradient_accumulation_steps}",
                      f"{w.micro_batch_size} x {w.gradient_accumulation_steps}",
                      replace(c, micro_batch_size=w.micro_batch_size,
                              gradient_accumulation_steps=w.gradient_accumulation_steps)),
    ]
    body = ["training:", f"  micro_batch_size: {c.micro_batch_size}",
            f"  gradient_accumulation_steps: {c.gradient_accumulation_steps}"]
    if tuned.cpu and c.micro_batch_size != w.micro_batch_size:
        head.append("#     (on a CPU, of batch pairs predicted equally fast the largest micro "
                    "batch:")
        head.append("#     the model prices no fixed cost per micro-batch)")
    if c.gradient_checkpointing != w.gradient_checkpointing:
        head.append("#   " + _why(tuned, "gradient_checkpointing",
                                  str(c.gradient_checkpointing).lower(),
                                  str(w.gradient_checkpointing).lower(),
                                  replace(c, gradient_checkpointing=w.gradient_checkpointing)))
        body.append(f"  gradient_checkpointing: {str(c.gradient_checkpointing).lower()}")
    if c.strategy != w.strategy:
        head.append("#   " + _why(tuned, "distributed.strategy", c.strategy, w.strategy,
                                  replace(c, strategy=w.strategy)))
        body += ["distributed:", f"  strategy: {c.strategy}"]
    return "\n".join([*head, *body]) + "\n"
