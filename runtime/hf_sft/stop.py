"""``training.stop`` inside the run: a ``TrainerCallback`` that stops training by the clock.

After each optimizer step (``on_step_end``, as the SFTTrainer actuator checks its
``stop_after_seconds``) the callback asks the trainer to stop — ``control.should_training_stop``:
the Trainer ends the loop after this step and finishes normally (``train_runtime``, the saved
model) — when

- ``after_seconds`` of training have passed, or
- the auto-stop rule is over: a warm-up of at least ``warmup_seconds`` (ended by the first
  step that ends past it), then a stable window of at least ``stable_seconds`` *and*
  ``stable_steps`` optimizer steps (the longer of the two, as in
  ``WARMUP_60S_STABLE_120S_OR_10_STEPS``).

Every process must stop at the same step, or the others would wait in a collective forever:
the clock read is the main process's, broadcast to all after each step. When training ends
the main process prints one line, ``[ftspec] stop {json}``: why it stopped, the last step,
and the warm-up's end (step, seconds, tokens), from which ``reconciler/measured.py`` computes
the stable throughput without the warm-up. Tokens are the trainer's own count of non-padding
tokens over all processes (``state.num_input_tokens_seen``).

Written here because no library stops a Hugging Face Trainer by time (transformers'
callbacks stop by evaluation metric only).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ftspec.runtime.stop_line import STOP_LINE


@dataclass(frozen=True)
class Mark:
    """The trainer after one optimizer step: step, seconds since training began, tokens."""

    step: int
    elapsed_s: float
    tokens: int

    def as_json(self) -> dict[str, Any]:
        return {"step": self.step, "elapsed_s": round(self.elapsed_s, 3), "tokens": self.tokens}


@dataclass
class StopWatch:
    """The stop rule's decisions (pure: the callback feeds it the shared clock)."""

    after_seconds: float | None = None
    warmup_seconds: float | None = None
    stable_seconds: float = 0.0
    stable_steps: int = 1
    warmup_end: Mark | None = None
    last: Mark | None = None
    reason: str | None = None

    @staticmethod
    def from_json(obj: dict[str, Any]) -> StopWatch:
        watch = StopWatch(after_seconds=obj.get("after_seconds"),
                          warmup_seconds=obj.get("warmup_seconds"),
                          stable_seconds=float(obj.get("stable_seconds") or 0.0),
                          stable_steps=int(obj.get("stable_steps") or 1))
        if watch.warmup_seconds == 0:  # no warm-up: the window starts with training
            watch.warmup_end = Mark(0, 0.0, 0)
        return watch

    def after_step(self, mark: Mark) -> bool:
        """Whether training stops after this step."""
        self.last = mark
        if self.warmup_seconds is not None:
            w = self.warmup_end
            if w is None:
                if mark.elapsed_s >= self.warmup_seconds:
                    self.warmup_end = mark
            elif mark.step - w.step >= self.stable_steps \
                    and mark.elapsed_s - w.elapsed_s >= self.stable_seconds:
                self.reason = "auto"
                return True
        if self.after_seconds is not None and mark.elapsed_s >= self.after_seconds:
            self.reason = "after_seconds"
            return True
        return False

    def summary(self) -> dict[str, Any]:
        return {"reason": self.reason,
                "last": self.last.as_json() if self.last else None,
                "warmup_end": self.warmup_end.as_json() if self.warmup_end else None,
                "rule": {"after_seconds": self.after_seconds,
                         "warmup_seconds": self.warmup_seconds,
                         "stable_seconds": self.stable_seconds,
                         "stable_steps": self.stable_steps}}


def _shared(value: float) -> float:
    """The main process's value on every process (itself when not distributed)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return value
    box: list[Any] = [value]
    dist.broadcast_object_list(box, src=0)
    return float(box[0])


def stop_callback(entry: dict[str, Any], clock: Callable[[], float] = time.monotonic) -> Any:
    """The ``TrainerCallback`` for prepare.json's ``stop`` entry."""
    from transformers import TrainerCallback

    class ClockStop(TrainerCallback):
        def __init__(self) -> None:
            self.watch = StopWatch.from_json(entry)
            self.started = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.started = clock()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            elapsed = _shared(clock() - self.started)
            mark = Mark(state.global_step, elapsed, int(state.num_input_tokens_seen))
            if self.watch.after_step(mark):
                control.should_training_stop = True

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.is_world_process_zero:
                print(STOP_LINE + json.dumps(self.watch.summary(), sort_keys=True),
                      flush=True)

    return ClockStop()
