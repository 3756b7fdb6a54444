"""`ftspec status` with no spec lists the runs as `ftspec list` does (it was a usage error);
`status -v` shows a platform's moments as times and its seconds as durations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ftspec.cli.render_status import platform_value
from ftspec.reconciler.local.record import STARTING, RunRecord
from ftspec.reconciler.local.state import StateStore
from helpers.cli_run import run


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with one recorded local run (its launcher starting: no supervisor yet)."""
    (tmp_path / ".ftspec").mkdir()
    StateStore(tmp_path).write(RunRecord(
        spec_id="tiny-local", spec_hash="0" * 16, spec_file="tiny-local.yaml",
        launcher="torchtune", argv=["tune", "run", "x"], env={}, cwd=".",
        run_dir=".ftspec/runs/tiny-local", log=".ftspec/runs/tiny-local/train.log",
        started_at=1_700_000_000.0, supervisor_pid=None, supervisor_create_time=None,
        pgid=None, state=STARTING))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_status_without_spec_is_the_list(project: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, listed, _ = run(capsys, "list")
    assert code == 0 and "tiny-local" in listed
    code, status, err = run(capsys, "status")
    assert (code, err) == (0, "")
    assert status == listed
    code, as_json, _ = run(capsys, "status", "--json")
    assert code == 0
    assert [row["name"] for row in json.loads(as_json)] == ["tiny-local"]


def test_status_options_that_need_a_spec(project: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "status", "--watch")
    assert (code, out) == (1, "")
    assert "--watch needs a spec" in err and "Traceback" not in err


def test_platform_values_read_as_times() -> None:
    now = 1_700_000_125.0
    assert platform_value("started_at", 1_700_000_000.5, now) == \
        "2023-11-14 22:13:20 UTC (2m 04s ago)"
    assert platform_value("start_time", 1_700_000_000_000, now) == \
        "2023-11-14 22:13:20 UTC (2m 05s ago)"  # Ray: milliseconds
    assert platform_value("runtime_s", 3725.0) == "1h 02m"
    assert platform_value("pid", 4242) == "4242"
    assert platform_value("stopped_by_ftspec", False) == "False"
