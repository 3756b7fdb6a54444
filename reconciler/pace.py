"""The one progress model of a run, on every launcher and every backend: the step, the planned
total, the percent done, the time elapsed and the time left (``Progress``), with the time left
computed by one function (``seconds_left``) from one kind of input: step times.

Step times come, in order of preference, from

- the launcher's own clock in its log: the progress bar torchtune and the Hugging Face
  trainer print after each step (``3/16 [00:05<00:20, …]``: seconds since the bar started,
  read by ``progress.Tracker``). The same log gives the same times to every reader, so
  ``apply --wait`` (following the log) and ``status`` (reading it at once) agree;
- else the run's average pace: the run started at step 0 at second 0 and reached its last
  step after ``elapsed_s`` (``run_pace``), where the backend knows when the run started;
- else the reader's clock while it follows the log (``apply --wait`` on a backend that does
  not say when the run started).

The text of each part (``step 3/16 (18%)``, ``42s elapsed``, ``1m 05s left``) is drawn here
too, from the JSON fields, so the live line, ``status``, ``status --watch`` and ``list``
print the same words for the same run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MIN_STEPS = 2
"""No time left before the run has trained this many steps (one step has no pace yet)."""
WINDOW = 20
"""The pace is taken over the last this many step times (it follows a change of pace)."""


@dataclass(frozen=True)
class StepTime:
    step: int
    at: float
    """Seconds on one clock (the launcher's bar, the run's, or the reader's)."""


def seconds_per_step(times: Sequence[StepTime]) -> float | None:
    """The pace over the last ``WINDOW`` step times; None with fewer than two of them or no
    time between them."""
    timed = list(times)[-WINDOW:]
    if len(timed) < 2:
        return None
    first, last = timed[0], timed[-1]
    if last.step <= first.step or last.at <= first.at:
        return None
    return (last.at - first.at) / (last.step - first.step)


def seconds_left(times: Sequence[StepTime], total_steps: int | None, *, ended: bool
                 ) -> float | None:
    """The time left until ``total_steps``: the steps to go at the pace of ``times``. None
    once the run ended, without a planned total, before ``MIN_STEPS`` steps, and past the
    planned total (the plan no longer tells when it ends)."""
    if ended or not total_steps or not times:
        return None
    step = times[-1].step
    if step < MIN_STEPS or step > total_steps:
        return None
    pace = seconds_per_step(times)
    return None if pace is None else pace * (total_steps - step)


def run_pace(step: int, elapsed_s: float) -> list[StepTime]:
    """The run's average pace as step times: step 0 when it started, ``step`` now."""
    return [StepTime(0, 0.0), StepTime(step, max(0.0, elapsed_s))]


@dataclass(frozen=True)
class Progress:
    """Where a run is: what ``apply --wait``, ``status``, ``status --watch`` and ``list``
    show, from the same fields (``fields``)."""

    step: int | None = None
    total_steps: int | None = None
    elapsed_s: float | None = None
    seconds_left: float | None = None
    ended: bool = False

    @property
    def percent(self) -> int | None:
        """Whole percent of the planned steps done, at most 100."""
        if self.step is None or not self.total_steps:
            return None
        return min(100, 100 * self.step // self.total_steps)

    @property
    def past_plan(self) -> bool:
        return self.step is not None and bool(self.total_steps) and \
            self.step > (self.total_steps or 0)

    def fields(self) -> dict[str, Any]:
        """The JSON fields (None: unknown)."""
        return {"step": self.step, "total_steps": self.total_steps, "percent": self.percent,
                "past_plan": self.past_plan or None,
                "elapsed_s": _round(self.elapsed_s), "seconds_left": _round(self.seconds_left)}


def progress(step: int | None, total_steps: int | None, *, logged: Sequence[StepTime],
             elapsed_s: float | None, ended: bool,
             observed: Sequence[StepTime] = ()) -> Progress:
    """The run's progress: the time left from the launcher's ``logged`` step times when they
    give a pace, else from the run's average pace over ``elapsed_s``, else from the step
    times ``observed`` while following the log."""
    left = None
    if step is not None:
        sources: list[Sequence[StepTime]] = [logged]
        if elapsed_s is not None:
            sources.append(run_pace(step, elapsed_s))
        sources.append(observed)
        for times in sources:
            if times and times[-1].step == step and seconds_per_step(times) is not None:
                left = seconds_left(times, total_steps, ended=ended)
                break
    return Progress(step, total_steps, None if elapsed_s is None else max(0.0, elapsed_s),
                    left, ended)


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


# ---- the words --------------------------------------------------------------------------


def duration(seconds: float | None) -> str:
    """``42s``, ``3m 05s``, ``1h 02m``, ``2d 03h``: every duration a person reads."""
    if seconds is None:
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


def step_text(fields: Mapping[str, Any]) -> str:
    """``3/16 (18%)``, ``18/16 (past the plan)``, ``3`` without a total, ``-/16`` without a
    step, empty without either (the ``list`` STEP cell; ``position`` prefixes ``step``)."""
    step, total = fields.get("step"), fields.get("total_steps")
    if step is None:
        return f"-/{total}" if total else ""
    if not total:
        return str(step)
    if int(step) > int(total):
        return f"{step}/{total} (past the plan)"
    percent = fields.get("percent")
    if percent is None:
        percent = min(100, 100 * int(step) // int(total))
    return f"{step}/{total} ({percent}%)"


def position(fields: Mapping[str, Any]) -> list[str]:
    """``step n/N (p%)`` and ``epoch e`` of a progress event or ``Status.metrics``."""
    parts = []
    if fields.get("step") is not None:
        parts.append(f"step {step_text(fields)}")
    if fields.get("epoch") is not None:
        parts.append(f"epoch {float(fields['epoch']):g}")
    return parts


def timing(fields: Mapping[str, Any]) -> list[str]:
    """``42s elapsed`` and ``1m 05s left``, each where known."""
    parts = []
    if fields.get("elapsed_s") is not None:
        parts.append(f"{duration(fields['elapsed_s'])} elapsed")
    if fields.get("seconds_left") is not None:
        parts.append(f"{duration(fields['seconds_left'])} left")
    return parts


def left_text(fields: Mapping[str, Any]) -> str:
    """The ``list`` LEFT cell: the time left, ``-`` when unknown."""
    left = fields.get("seconds_left")
    return "-" if left is None else duration(left)
