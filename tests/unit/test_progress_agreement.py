"""`apply --wait` (and `status --watch`) and `status` print the same progress for the same run
state: the recorded logs of real tiny runs on each launcher (accelerate: TRL's SFTTrainer
through ftspec's compiled command; fms_hf_tuning: ``tuning.sft_trainer`` 3.2.2 on
transformers 4.55; torchtune 0.6.1's LoRA recipe) are written out line by line, followed
by the one wait loop every backend runs (``waiting.wait_until_done`` over the local backend's
``LogFollower``), and at each step the log written so far is read at once as `status` reads
it; the step, percent, elapsed time and time left of the live line are those of `status`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ftspec.cli.render_status import render_status, status_json
from ftspec.reconciler.logread import LogFollower
from ftspec.reconciler.model import Phase, Status
from ftspec.reconciler.progress import status_metrics, track_text
from ftspec.reconciler.waiting import Observed, wait_until_done

DATA = Path(__file__).parent / "data"
# what ``tracker_settings`` gives for the quickstart spec (16 steps of 4 rows, a record a step)
SETTINGS = {"total_steps": 16, "steps_per_epoch": 16, "logging_steps": 1}
ADDRESS = "local.run.tiny-local"
MARKUP = re.compile(r"\[/?[a-z ]+\]")


def _elapsed(lines_written: int) -> float:
    """The run's elapsed time as the backend would say it: the same for both readers."""
    return 30.0 + 0.5 * lines_written


class _Recorder:
    """Each live progress line, with `status`'s first line for the log written then."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.written = 0
        self.pairs: list[tuple[str, str]] = []

    def event(self, message: str, **data: Any) -> None:
        if not data.get("progress"):
            return
        metrics = status_metrics(track_text(self.log.read_text(), **SETTINGS),
                                 elapsed_s=_elapsed(self.written), ended=False)
        head = render_status(status_json(Status(ADDRESS, Phase.RUNNING, "running",
                                                metrics=metrics)))[0]
        self.pairs.append((message, MARKUP.sub("", head)))


def _follow(recorded: str, log: Path) -> _Recorder:
    lines = recorded.splitlines(keepends=True)
    log.write_text("")
    follower = LogFollower(log)
    recorder = _Recorder(log)

    def look() -> Observed:
        if recorder.written < len(lines):
            with log.open("a") as f:
                f.write(lines[recorder.written])
            recorder.written += 1
        done = recorder.written == len(lines)
        return Observed(Phase.SUCCEEDED if done else Phase.RUNNING, follower.read_new(),
                        elapsed_s=_elapsed(recorder.written))

    wait_until_done(look, lambda: Status(ADDRESS, Phase.SUCCEEDED), tracker=_tracker(),
                    reporter=recorder, address=ADDRESS, poll_s=0.0)
    return recorder


def _tracker() -> Any:
    from ftspec.reconciler.progress import Tracker

    return Tracker(**SETTINGS)


def _parts(line: str) -> tuple[str, str]:
    """The step part (``step 3/16 (18%)``) and the timing (``32s elapsed · 10s left``)."""
    assert "step " in line, line
    parts = [p.strip() for p in line[line.index("step "):].split("·")]  # status: after the phase
    step = parts[0]
    timing = " · ".join(p for p in parts if p.endswith((" elapsed", " left")))
    return step, timing


@pytest.mark.parametrize("name", ["accelerate", "fms_hf_tuning", "torchtune"])
def test_the_live_line_and_status_say_the_same_progress(name: str, tmp_path: Path) -> None:
    recorded = (DATA / f"{name}_tiny_train.log").read_text()
    recorder = _follow(recorded, tmp_path / "train.log")
    assert len(recorder.pairs) == 16, recorder.pairs  # one live line a step
    with_eta = 0
    for live, status in recorder.pairs:
        assert _parts(live) == _parts(status), (live, status)
        with_eta += live.endswith(" left")
    assert with_eta >= 14, recorder.pairs  # from step 2 on (the bar's clock is in seconds)
    first, last = recorder.pairs[0][0], recorder.pairs[-1][0]
    assert first.startswith("step 1/16 (6%) · ") and " left" not in first, first
    assert last.startswith("step 16/16 (100%) · ") and last.endswith(" · 0s left"), last
