"""``ftspec logs`` prints a job's log as every other command prints text (issue 34): terminal
control sequences escaped (an OSC 52 clipboard write, an OSC 0 title, clear-screen), lines
over 16 KiB cut with a note, credentials redacted; ``--raw`` prints the log as written (still
redacted). ``status`` cuts a platform's long message alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.cli.output import MAX_LINE_CHARS, MAX_MESSAGE_CHARS
from ftspec.cli.render_status import render_status

from security.localstate import SPEC, ended_run, run_cli

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
TITLE = "\x1b]0;you have been owned\x07"
CLEAR = "\x1b[2J\x1b[H"
TOKEN = "hf_" + "Fake0Token1ForLogs2Test3" * 2


@pytest.fixture
def logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose spec has an ended local run with a hostile log."""
    ended_run(tmp_path, f"step 1 {OSC52}copied\n{TITLE}titled\n{CLEAR}cleared\n"
                        f"token {TOKEN}\n" + "x" * (5 << 20) + "\nlast line\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_logs_escape_control_sequences_and_cut_long_lines(logged: Path) -> None:
    code, out = run_cli(["logs", SPEC])
    assert code == 0, out[:2000]
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]52;c;" in out and "\\x1b]0;" in out and "\\x1b[2J" in out
    assert TOKEN not in out and "<redacted>" in out
    long = next(line for line in out.splitlines() if line.startswith("xxxx"))
    assert len(long) < MAX_LINE_CHARS + 200
    assert f"{(5 << 20) - MAX_LINE_CHARS} more characters cut" in long
    assert "--raw" in long and out.rstrip().endswith("last line")


@pytest.mark.slow
def test_logs_raw_prints_the_log_as_written_but_redacted(logged: Path) -> None:
    code, out = run_cli(["logs", SPEC, "--raw"])
    assert code == 0
    assert OSC52 in out and TITLE in out and CLEAR in out
    assert "x" * (5 << 20) in out
    assert TOKEN not in out


def test_status_cuts_a_long_platform_message() -> None:
    message = "admission failed: " + "y" * 300_000
    lines = render_status({"address": "kubeflow.trainjob.ml/a", "phase": "Failed",
                           "message": message, "reason": {"validity": "failed",
                                                          "platform": message}})
    state = next(line for line in lines if line.startswith("  state:"))
    assert len(state) < MAX_MESSAGE_CHARS + 200 and "more characters cut" in state
    assert all(len(line) < MAX_MESSAGE_CHARS + 300 for line in lines)
