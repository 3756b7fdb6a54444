"""``training.stop``: the stop watch's decisions (pure), the stop line read back from a log
(untrusted), and the measured properties it adds (``reconciler.stopped``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ftspec.reconciler.measured import measure
from ftspec.reconciler.progress import track_text
from ftspec.reconciler.stopped import stopped
from ftspec.runtime.hf_sft.stop import STOP_LINE, Mark, StopWatch
from ftspec.spec.model.training import Stop


def _run(watch: StopWatch, seconds_per_step: float, first_step_s: float,
         limit: int = 1000) -> int:
    """Steps until the watch stops (a slow first step, then a steady pace)."""
    for step in range(1, limit + 1):
        elapsed = first_step_s + (step - 1) * seconds_per_step
        if watch.after_step(Mark(step, elapsed, 100 * step)):
            return step
    return limit


def test_the_actuators_method_is_its_three_numbers() -> None:
    assert Stop(method="WARMUP_60S_STABLE_120S_OR_10_STEPS").auto() == (60.0, 120.0, 10)
    assert Stop(warmup_seconds=2, stable_steps=3).auto() == (2.0, 0.0, 3)
    assert Stop(after_seconds=5).auto() is None


def test_auto_stop_waits_for_the_longer_of_the_seconds_and_the_steps() -> None:
    rule = {"warmup_seconds": 60.0, "stable_seconds": 120.0, "stable_steps": 10}
    # fast steps (2 s): warm-up ends at the first step past 60 s (step 26 at 60 s), then
    # 120 s must pass (60 more steps): the seconds are the longer
    fast = StopWatch.from_json(rule)
    assert _run(fast, 2.0, 10.0) == 86 and fast.reason == "auto"
    assert fast.warmup_end == Mark(26, 60.0, 2600)
    # slow steps (30 s): 10 steps take 300 s, longer than 120 s
    slow = StopWatch.from_json(rule)
    assert _run(slow, 30.0, 5.0) == 3 + 10 and slow.reason == "auto"


def test_after_seconds_stops_first_when_it_comes_first() -> None:
    watch = StopWatch.from_json({"after_seconds": 7.0, "warmup_seconds": 5.0,
                                 "stable_seconds": 100.0, "stable_steps": 2})
    assert _run(watch, 1.0, 1.0) == 7 and watch.reason == "after_seconds"
    assert watch.warmup_end is not None and watch.warmup_end.step == 5


def test_no_warmup_starts_the_window_with_training() -> None:
    watch = StopWatch.from_json({"warmup_seconds": 0, "stable_seconds": 0, "stable_steps": 4})
    assert _run(watch, 1.0, 1.0) == 4
    assert watch.warmup_end == Mark(0, 0.0, 0)


def _line(summary: dict[str, Any]) -> str:
    return STOP_LINE + json.dumps(summary) + "\n"


GOOD = {"reason": "auto", "last": {"step": 14, "elapsed_s": 9.0, "tokens": 7000},
        "warmup_end": {"step": 4, "elapsed_s": 4.0, "tokens": 2000}, "rule": {}}


def test_the_stable_window_excludes_the_warmup() -> None:
    got = stopped("progress\r" + _line(GOOD), devices=2)
    assert got["stopped_by"] == "auto" and got["stopped_at_step"] == 14
    assert got["stable_window"] == {"from_step": 4, "to_step": 14, "seconds": 5.0,
                                    "tokens": 5000, "complete": True}
    assert got["dataset_tokens_per_second_stable"] == 1000.0
    assert got["dataset_tokens_per_second_stable_per_device"] == 500.0


def test_a_run_that_ended_in_its_warmup_has_no_stable_window() -> None:
    got = stopped(_line({**GOOD, "reason": None, "warmup_end": None}), devices=1)
    assert got == {"stopped_at_step": 14}


@pytest.mark.parametrize("bad", [
    {**GOOD, "last": {"step": True, "elapsed_s": 9.0, "tokens": 7000}},
    {**GOOD, "last": {"step": 14, "elapsed_s": "9", "tokens": 7000}},
    {**GOOD, "warmup_end": {"step": 4, "elapsed_s": -1.0, "tokens": 2000}},
    {**GOOD, "warmup_end": {"step": 15, "elapsed_s": 4.0, "tokens": 2000}},
    {**GOOD, "warmup_end": {"step": 4, "elapsed_s": 4.0, "tokens": 8000}},
    {**GOOD, "warmup_end": {"step": 4, "elapsed_s": 9.0, "tokens": 2000}},
])
def test_a_tampered_stop_line_gives_no_throughput(bad: dict[str, Any]) -> None:
    got = stopped(_line(bad), devices=1)
    assert "dataset_tokens_per_second_stable" not in got and "stable_window" not in got


def test_unreadable_stop_lines_are_ignored() -> None:
    assert stopped(STOP_LINE + "{not json\n" + STOP_LINE + "[1, 2]\n", devices=1) == {}
    assert stopped(_line({**GOOD, "reason": "because"}), devices=1).get("stopped_by") is None
    text = STOP_LINE + json.dumps({**GOOD, "last": {"step": 14, "elapsed_s": float("nan"),
                                                    "tokens": 1}}) + "\n"
    assert "stable_window" not in stopped(text, devices=1)


# What transformers logs when it counts input tokens: each step's record carries the
# run time so far, and the summary has train_loss.
COUNTED = (
    "{'loss': '5.787', 'num_tokens': '890', 'epoch': '0.0625', 'num_input_tokens_seen': 890, "
    "'train_runtime': '9.038', 'train_tokens_per_second': '98.47'}\n"
    "{'loss': '5.788', 'num_tokens': '1802', 'epoch': '0.125', 'num_input_tokens_seen': 1802, "
    "'train_runtime': '10.96', 'train_tokens_per_second': '164.4'}\n"
    "{'train_runtime': '12.0', 'train_samples_per_second': '1.13', 'train_loss': '5.7', "
    "'epoch': '0.125', 'num_input_tokens_seen': 1802}\n"
    + _line({**GOOD, "last": {"step": 2, "elapsed_s": 11.0, "tokens": 1802},
             "warmup_end": {"step": 1, "elapsed_s": 9.0, "tokens": 890}})
)


def test_step_records_that_carry_the_runtime_are_still_steps() -> None:
    tracker = track_text(COUNTED, total_steps=16, steps_per_epoch=16)
    assert tracker.last is not None and tracker.last.step == 2
    assert tracker.tokens_seen() == 1802
    got = measure(COUNTED, tracker, validity="ok", devices=1, global_batch=4)
    assert got["train_runtime_s"] == 12.0 and got["dataset_tokens"] == 1802
    assert got["dataset_tokens_per_second_stable"] == round(912 / 2.0, 1)
