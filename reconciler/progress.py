"""Training progress read back from a launcher's own log (every backend): ``Tracker`` turns
the records ``records.py`` parses into per-step progress (step/total, epoch, loss trend, lr,
rate, each step's time on the launcher's clock); ``status_metrics`` is what ``status`` shows,
``report`` what a backend's wait reports, both through the one progress model (``pace``).
The parser's names are re-exported here, where the backends import them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ftspec.reconciler import pace
from ftspec.reconciler.pace import Progress, StepTime, position, timing
from ftspec.reconciler.records import (
    BAR,
    Bar,
    Record,
    clean_lines,
    parse_bar,
    parse_line,
    split_lines,
)

__all__ = ["BAR", "Bar", "Point", "Record", "Tracker", "clean_lines", "parse_bar",
           "parse_line", "progress_line", "report", "sparkline", "split_lines",
           "status_metrics", "track_text", "tracker_for", "tracker_settings"]

SPARK = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Point:
    step: int
    loss: float | None
    lr: float | None
    epoch: float | None
    tokens_per_s: float | None
    tokens: float | None
    at: float
    """When the tracker saw it (monotonic seconds): the reader's clock."""
    bar: Bar | None = None
    """The launcher's progress bar as the step was recorded: its time on the launcher's clock."""
    segment: int = 0
    """Which bar it was read from (torchtune starts a bar, and its clock, each epoch)."""
    counted: bool = False
    """Its record carried no step (the trainer's dicts: the tracker counted it)."""


@dataclass
class Tracker:
    """Records -> per-step progress: step/total, epoch, loss and trend, lr, rate, time left."""

    total_steps: int | None = None
    steps_per_epoch: int | None = None
    logging_steps: int = 1
    tokens_per_step: int | None = None
    points: list[Point] = field(default_factory=list)
    final: dict[str, float] = field(default_factory=dict)
    eval_loss: float | None = None
    clock: Any = time.monotonic
    phase: str | None = None
    """The last start-up / saving phase reported (``phases.phase_line``)."""
    _bar: Bar | None = field(default=None, repr=False)
    """The bar last printed since the last step was recorded."""
    _bar_total: int | None = field(default=None, repr=False)
    """The run's total steps as the trainer's bar gave it at a step it counted (the bar at
    that step, or at the one before when the record came first: the first step's record may
    come before any bar but ``0/N``); kept, since a later record may be written before its
    step's bar (two streams in one log)."""

    def feed(self, lines: Iterable[str]) -> list[Point]:
        """Parse ``lines``; return the points of steps not seen before (in order)."""
        new: list[Point] = []
        for line in lines:
            bar = parse_bar(line)
            if bar is not None:
                self._bar = bar
            record = parse_line(line)
            if record is None:
                continue
            if record.final:
                self.final = record.final
            if record.eval_loss is not None:
                self.eval_loss = record.eval_loss
            if self._completes_last(record):
                continue
            point = self._point(record)
            if point is not None:
                self.points.append(point)
                new.append(point)
        return new

    def _completes_last(self, record: Record) -> bool:
        """A second record of the step just seen (torchtune prints its progress bar, then
        the step's metrics line): fill in what the first one lacked (lr, tokens a second)."""
        last = self.last
        if last is None or record.step != last.step:
            return False
        self.points[-1] = replace(
            last, lr=last.lr if last.lr is not None else record.lr,
            tokens_per_s=last.tokens_per_s if last.tokens_per_s is not None
            else record.tokens_per_s,
            tokens=last.tokens if last.tokens is not None else record.tokens)
        return True

    def _point(self, record: Record) -> Point | None:
        if record.loss is None:
            return None
        last = self.points[-1].step if self.points else 0
        step = record.step
        if step is None:  # a trainer record: logging_steps after the previous one
            step = last + self.logging_steps
            if record.epoch is not None and self.steps_per_epoch:
                step = max(step, round(record.epoch * self.steps_per_epoch))
        if step <= last:
            return None
        epoch = record.epoch
        if epoch is None and self.steps_per_epoch:
            epoch = (step - 1) // self.steps_per_epoch + 1
        bar, self._bar = self._bar, None
        counted = record.step is None
        if counted and bar is not None and step - 1 <= bar.n <= step and bar.of >= step:
            self._bar_total = bar.of
        if counted and bar is not None and bar.n != step:
            bar = None  # a bar not yet at this step (its record came first): not its time
        return Point(step, record.loss, record.lr, epoch, record.tokens_per_s, record.tokens,
                     self.clock(), bar, self._segment(bar), counted)

    def _segment(self, bar: Bar | None) -> int:
        """The bar ``bar`` continues the last timed step's, or a new one (a new epoch's bar,
        its clock from zero again)."""
        timed = next((p for p in reversed(self.points) if p.bar is not None), None)
        if timed is None or timed.bar is None:
            return 0
        if bar is not None and bar.of == timed.bar.of and bar.n > timed.bar.n \
                and bar.elapsed_s >= timed.bar.elapsed_s:
            return timed.segment
        return timed.segment + 1

    # ---- derived values -------------------------------------------------------------

    @property
    def last(self) -> Point | None:
        return self.points[-1] if self.points else None

    def losses(self) -> list[float]:
        return [p.loss for p in self.points if p.loss is not None]

    def trend(self, window: int = 5) -> str:
        """``falling`` / ``rising`` / ``flat`` (mean of the last window vs the one before)."""
        losses = self.losses()
        if len(losses) < 4:
            return ""
        w = min(window, len(losses) // 2)
        now, before = losses[-w:], losses[-2 * w:-w]
        a, b = sum(now) / w, sum(before) / w
        if abs(a - b) <= 0.01 * max(abs(b), 1e-9):
            return "flat"
        return "falling" if a < b else "rising"

    def seconds_per_step(self) -> float | None:
        """The pace over the last ten points; over all of them when those came in one read
        (a poll returns several steps at once); None while no time has passed between them."""
        for timed in (self.points[-10:], self.points):
            if len(timed) >= 2 and timed[-1].step > timed[0].step and timed[-1].at > timed[0].at:
                return (timed[-1].at - timed[0].at) / (timed[-1].step - timed[0].step)
        return None

    def logged_rate(self) -> float | None:
        """The launcher's own tokens a second, averaged over the last steps (it is jumpy)."""
        logged = [p.tokens_per_s for p in self.points[-5:] if p.tokens_per_s is not None]
        return sum(logged) / len(logged) if logged else None

    def tokens_per_s(self) -> float | None:
        logged = self.logged_rate()
        if logged is not None:
            return logged
        per_step = self.seconds_per_step()
        if per_step and self.tokens_per_step:
            return self.tokens_per_step / per_step
        return None

    def tokens_seen(self) -> int | None:
        """Tokens trained on, when the launcher counts them (TRL does; torchtune does not)."""
        for point in reversed(self.points):
            if point.tokens is not None:
                return int(point.tokens)
        return None

    def planned_total(self) -> int | None:
        """The run's total steps: the compiled job's, else the Hugging Face trainer's bar
        (it counts the run's optimizer steps, so its position is the step counted; torchtune's
        counts an epoch's, and a bar before the first step may be the model loading's): the
        bar's total at the last step whose bar stood at that step, kept for the steps after
        it whose record came before their bar."""
        return self.total_steps or self._bar_total

    def logged_times(self) -> list[StepTime]:
        """The last step and those before it on the same bar, timed by the launcher's clock."""
        last = self.last
        if last is None or last.bar is None:
            return []
        out = []
        for point in reversed(self.points):
            if point.bar is None or point.segment != last.segment:
                break
            out.append(StepTime(point.step, point.bar.elapsed_s))
        return out[::-1]

    def progress(self, *, elapsed_s: float | None = None, ended: bool = False,
                 following: bool = False) -> Progress:
        """Where the run is (``pace.progress``): ``elapsed_s`` since it started, where the
        reader knows it; ``following``: the log was fed as it grew, so the times the tracker
        saw each step are a last resort (a log read at once has none worth the name)."""
        last = self.last
        seen = [StepTime(p.step, p.at) for p in self.points] if following else []
        return pace.progress(None if last is None else last.step, self.planned_total(),
                             logged=self.logged_times(), elapsed_s=elapsed_s, ended=ended,
                             observed=seen)

    def seconds_left(self) -> float | None:
        return self.progress(following=True).seconds_left

    def event(self, *, elapsed_s: float | None = None) -> dict[str, Any]:
        """The latest step as one JSON-able event (what ``--json`` emits; ``apply --wait``
        follows the log)."""
        last = self.last
        if last is None:
            return {}
        return {**self.progress(elapsed_s=elapsed_s, following=True).fields(),
                "epoch": last.epoch,
                "loss": last.loss, "trend": self.trend() or None, "lr": last.lr,
                "tokens_per_s": _round(self.tokens_per_s())}

    def curve(self, limit: int = 5000) -> dict[str, list[Any]]:
        """The recorded points as columns (``step``, ``loss``, ``lr``): plots, sparklines."""
        points = self.points[-limit:]
        return {"step": [p.step for p in points], "loss": [p.loss for p in points],
                "lr": [p.lr for p in points]}

    def summary(self) -> dict[str, Any]:
        """What ``status`` keeps: the last step and the loss history (for a sparkline)."""
        out = self.event()
        if self.points:
            out["first_loss"] = self.points[0].loss
            out["curve"] = self.curve()
        if self.final:
            out["final"] = self.final
        if self.eval_loss is not None:
            out["eval_loss"] = self.eval_loss
        out["tokens"] = self.tokens_seen()
        return {k: v for k, v in out.items() if v is not None}


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def track_text(text: str, **settings: Any) -> Tracker:
    """A tracker fed with a whole log (``status``: no timing, the record's values only)."""
    tracker = Tracker(**settings)
    tracker.feed(split_lines(text))
    return tracker


def status_metrics(tracker: Tracker, *, elapsed_s: float | None, ended: bool
                   ) -> dict[str, Any]:
    """What ``status`` shows of a run, on every backend: the tracker's summary and its
    progress (``Tracker.progress``: percent, elapsed, time left, as ``apply --wait`` shows
    them). A log read at once gives every step the same clock, so the reader's pace (tokens
    a second) does not apply here: the rate is the launcher's own figure, else the run's
    tokens over its runtime (the trainer's ``train_runtime`` once it ended, else the time
    elapsed). Once the run ended there is no time left, and its last loss is the final one."""
    out = tracker.summary()
    out.pop("seconds_left", None)
    out.pop("tokens_per_s", None)
    rate = _average_rate(tracker, elapsed_s)
    if rate is not None:
        out["tokens_per_s"] = round(rate, 1)
    if elapsed_s is not None:
        out["elapsed_s"] = round(max(0.0, elapsed_s), 1)
    last = tracker.last
    if last is not None:
        fields = tracker.progress(elapsed_s=elapsed_s, ended=ended).fields()
        out.update({k: v for k, v in fields.items() if v is not None})
    if ended and last is not None and last.loss is not None:
        out["final_loss"] = last.loss
    return out


def _average_rate(tracker: Tracker, elapsed_s: float | None) -> float | None:
    logged = tracker.logged_rate()
    if logged is not None:
        return logged
    last = tracker.last
    tokens = tracker.tokens_seen()
    if tokens is None and last is not None and tracker.tokens_per_step:
        tokens = last.step * tracker.tokens_per_step
    runtime = (tracker.final or {}).get("train_runtime") or elapsed_s
    if not tokens or not runtime or runtime <= 0:
        return None
    return tokens / runtime


def tracker_settings(job: Any) -> dict[str, Any]:
    """The job's totals a ``Tracker`` needs (``Job`` IR: steps, steps per epoch, tokens)."""
    logging = job.spec.training.logging
    return {"total_steps": job.total_steps, "steps_per_epoch": job.steps_per_epoch,
            "logging_steps": logging.steps if logging.strategy == "steps" else 1,
            "tokens_per_step": job.tokens_per_step}


def tracker_for(job: Any) -> Tracker:
    return Tracker(**tracker_settings(job))


def sparkline(values: list[float], width: int = 20) -> str:
    """A small unicode sparkline of ``values`` (the last ``width`` buckets)."""
    if not values:
        return ""
    if len(values) > width:  # mean of equal buckets
        size = len(values) / width
        values = [sum(chunk) / len(chunk) for chunk in
                  (values[int(i * size):max(int((i + 1) * size), int(i * size) + 1)]
                   for i in range(width))]
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    return "".join(SPARK[min(len(SPARK) - 1, int((v - lo) / span * (len(SPARK) - 1) + 0.5))]
                   for v in values)


def progress_line(event: dict[str, Any]) -> str:
    """One human line from a progress event (``apply --wait``'s live line)."""
    parts = position(event)
    if event.get("loss") is not None:
        arrow = {"falling": " ↓", "rising": " ↑", "flat": " →"}.get(event.get("trend") or "", "")
        parts.append(f"loss {event['loss']:.4f}{arrow}")
    if event.get("lr") is not None:
        parts.append(f"lr {event['lr']:.2e}")
    if event.get("tokens_per_s") is not None:
        parts.append(f"{event['tokens_per_s']:,.0f} tok/s")
    return " · ".join(parts + timing(event))


def report(tracker: Tracker, lines: Iterable[str], reporter: Any, address: str,
           elapsed_s: float | None = None) -> None:
    """Feed ``lines``; report one ``progress`` event per new step (every backend's wait),
    and each start-up / saving phase a line announces (``phases.phase_line``).
    ``elapsed_s``: since the run started, where the backend knows it."""
    from ftspec.reconciler.phases import phase_line

    for line in lines:
        if tracker.feed([line]):
            event = tracker.event(elapsed_s=elapsed_s)
            reporter.event(progress_line(event), progress=True, address=address, **event)
            continue
        for part in line.split("\r"):
            phase = phase_line(part)
            if phase is not None and phase != tracker.phase:
                tracker.phase = phase
                reporter.event(f"{address}: {phase}", address=address, run_phase=phase)
