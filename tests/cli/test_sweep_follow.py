"""`apply --wait` of a sweep's points (cli/sweep_follow.py): on a terminal one live table with
a row per point (name, phase, step, loss, time left) drawn from each point's status, then the
usual verdict and an exit code that follows the runs; piped, every line names its point.
The points' statuses come from a scripted backend: nothing trains."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace
from typing import Any

import pytest
from ftspec.cli.apply_flow import _wait
from ftspec.cli.output import plain_markup
from ftspec.cli.sweep_follow import table_text
from ftspec.reconciler.backend import Desired, SweepPlace
from ftspec.reconciler.model import Phase, Status

NAMES = ["sw-lr-1e-2", "sw-lr-3e-3", "sw-lr-1e-3"]
STARTED = {f"local.{n}" for n in NAMES}  # every point started by this apply
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _point(name: str, position: int, size: int = 3) -> Desired:
    job: Any = SimpleNamespace(spec_id=name)
    return Desired(job, (), "sw.yaml", sweep=SweepPlace("sw", position, size, 1))


def _queued(name: str) -> Status:
    return Status(f"local.{name}", Phase.PENDING, "queued (pid 7): point 3 of 3 waits",
                  platform={"queued": {"max_parallel": 1, "position": 2, "size": 3}})


def _running(name: str, step: int) -> Status:
    return Status(f"local.{name}", Phase.RUNNING, f"running: step {step}",
                  platform={"run_started_at": 1.0},
                  metrics={"step": step, "total_steps": 16, "percent": 100 * step // 16,
                           "loss": 1.5 - step / 100, "seconds_left": 65.0})


def _ended(name: str, phase: Phase = Phase.SUCCEEDED) -> Status:
    return Status(f"local.{name}", phase, "succeeded" if phase is Phase.SUCCEEDED
                  else "failed: exit code 1",
                  metrics={"step": 16, "total_steps": 16, "percent": 100, "loss": 0.8123,
                           "seconds_left": 0.0})


def _rows(text: str) -> list[list[str]]:
    plain = plain_markup(text)
    assert plain is not None
    return [re.split(r"\s{2,}", line.strip()) for line in plain.splitlines()]


def test_the_table_has_a_row_per_point_as_list_words_it() -> None:
    rows = _rows(table_text(NAMES, [_ended(NAMES[0]), _running(NAMES[1], 3),
                                    _queued(NAMES[2])]))
    assert rows == [
        ["NAME", "PHASE", "STEP", "LOSS", "LEFT"],
        [NAMES[0], "Succeeded", "16/16 (100%)", "0.8123", "-"],
        [NAMES[1], "Running", "3/16 (18%)", "1.4700", "1m 05s"],
        [NAMES[2], "Pending (queued)", "-", "-", "-"],
    ]


class _Backend:
    """Each point's status from a script: one list of statuses per look, the last repeated."""

    def __init__(self, looks: list[list[Status]]) -> None:
        self.looks = looks
        self.seen = 0
        self.waited: list[str] = []

    def status(self, desired: Desired) -> list[Status]:
        n = NAMES.index(desired.job.spec_id)
        look = self.looks[min(self.seen // len(NAMES), len(self.looks) - 1)]
        self.seen += 1
        return [look[n]]

    def wait(self, desired: Desired, reporter: Any, timeout_s: float | None) -> Status:
        name = desired.job.spec_id
        addr = f"local.{name}"
        self.waited.append(name)
        reporter.event(f"{addr}: loading the model", address=addr, run_phase="loading")
        for step in (1, 2):
            reporter.event(f"step {step}/2 ({50 * step}%) · loss 1.0000", progress=True,
                           address=addr, step=step)
        return _ended(name)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _terminal(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    err = _Tty()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr("time.sleep", lambda s: None)
    return err


SCRIPT = [
    [_running(NAMES[0], 3), _queued(NAMES[1]), _queued(NAMES[2])],
    [_ended(NAMES[0]), _running(NAMES[1], 8), _queued(NAMES[2])],
    [_ended(NAMES[0]), _ended(NAMES[1]), _ended(NAMES[2])],
]


def test_on_a_terminal_the_points_are_followed_in_one_table(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    err = _terminal(monkeypatch)
    backend = _Backend(SCRIPT)
    code = _wait(backend, [_point(n, i) for i, n in enumerate(NAMES)], None, False, {},
                 STARTED)
    assert code == 0
    assert backend.waited == []  # no log followed one run after another
    shown = ANSI.sub("", err.getvalue())
    # every look drawn: the queued points, the one running, then all three done
    assert re.search(rf"{NAMES[1]}\s+Pending \(queued\)\s+-", shown)
    assert re.search(rf"{NAMES[1]}\s+Running\s+8/16 \(50%\)\s+1\.4200\s+1m 05s", shown)
    final = shown[shown.rindex("NAME"):]
    assert [r[:3] for r in _rows(final)[1:]] == [[n, "Succeeded", "16/16 (100%)"]
                                               for n in NAMES]
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1] == "3 runs succeeded."
    assert "succeeded" not in out.replace("3 runs succeeded.", "")  # no status blocks


def test_a_failed_point_fails_the_wait_and_is_named(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _terminal(monkeypatch)
    looks = [[_ended(NAMES[0]), _ended(NAMES[1], Phase.FAILED), _ended(NAMES[2])]]
    code = _wait(_Backend(looks), [_point(n, i) for i, n in enumerate(NAMES)], None, False,
                 {}, STARTED)
    assert code == 1
    out = capsys.readouterr().out
    assert "failed: exit code 1" in out  # the failed point's status block
    assert out.rstrip().splitlines()[-1] == f"1 of 3 runs did not succeed: local.{NAMES[1]}"


def test_at_the_timeout_the_table_stops_with_what_it_saw(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _terminal(monkeypatch)
    clock = iter(range(100))
    monkeypatch.setattr("time.monotonic", lambda: float(next(clock)))
    looks = [[_running(NAMES[0], 3), _queued(NAMES[1]), _queued(NAMES[2])]]
    code = _wait(_Backend(looks), [_point(n, i) for i, n in enumerate(NAMES)], 2.0, False,
                 {}, STARTED)
    assert code == 1
    assert "3 of 3 runs did not succeed" in capsys.readouterr().out


def test_piped_every_line_names_its_point(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setenv("NO_COLOR", "1")
    backend = _Backend(SCRIPT)
    code = _wait(backend, [_point(n, i) for i, n in enumerate(NAMES[:2])], None, False, {},
                 STARTED)
    assert code == 0 and backend.waited == NAMES[:2]
    lines = err.getvalue().splitlines()
    steps = [line for line in lines if "step " in line]
    assert len(steps) == 4
    for name in NAMES[:2]:
        assert [line for line in steps if line.startswith(f"{name}: step ")] == [
            f"{name}: step 1/2 (50%) · loss 1.0000", f"{name}: step 2/2 (100%) · loss 1.0000"]
    assert f"local.{NAMES[0]}: loading the model" in lines  # named once, not twice
    assert "2 runs succeeded." in capsys.readouterr().out


def test_one_run_piped_keeps_its_lines_as_they_were(
        monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    one = Desired(SimpleNamespace(spec_id=NAMES[0]), (), "a.yaml")
    assert _wait(_Backend(SCRIPT), [one], None, False, {}, STARTED) == 0
    assert "step 1/2 (50%) · loss 1.0000" in err.getvalue().splitlines()
