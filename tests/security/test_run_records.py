"""A run record decides nothing about which processes are signalled (issue 20, item 1).

On main, ``.ftspec/local/<id>.json`` named the process group ``destroy`` killed: ``pgid: 1``
ran ``kill(-1)`` (every process, as root), ``pgid: 0`` killed ftspec's own group, a NaN create
time passed the pid-reuse guard, and hand-edited types gave ``internal error``. Each test
here plants such a record next to a bystander process and checks the refusal. They run in a
private PID namespace: a regression can only kill processes there (PID 1 there is the test
itself, so ``kill(-1)`` or ``killpg(1)`` fails the test instead of the machine).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from ftspec.reconciler.local import procs
from helpers.pidns import private_pid_namespace

from security.localstate import (
    RECORD,
    RUN_DIR,
    SPEC,
    SPEC_ID,
    alive,
    bystander,
    plant_record,
    project,
    record_for,
    run_cli,
)

COMMANDS = [["status", SPEC], ["status", SPEC, "--json"], ["plan", SPEC],
            ["apply", SPEC, "--auto-approve"], ["destroy", SPEC, "--auto-approve"],
            ["logs", SPEC], ["output", SPEC]]


def _bad_records(pid: int, ct: float) -> dict[str, Any]:
    """Hand-edited records: each is refused before anything reads a process."""
    rec = record_for(pid, ct)
    text = json.dumps(rec)
    without = {k: v for k, v in rec.items() if k != "supervisor_pid"}
    return {
        "pgid-1": record_for(pid, ct, pgid=1),
        "pgid-0": record_for(pid, ct, pgid=0),
        "pgid-negative": record_for(pid, ct, pgid=-1),
        "pid-1": record_for(1, ct),
        "pid-null": record_for(pid, ct, supervisor_pid=None),
        "pid-string": record_for(pid, ct, supervisor_pid=str(pid)),
        "pid-negative": record_for(-pid, ct, pgid=-pid),
        "pid-huge": record_for(2**40, ct, pgid=2**40),
        "pid-bool": record_for(True, ct),
        "pid-missing": without,
        "time-string": record_for(pid, ct, supervisor_create_time="yesterday"),
        "time-nan": text.replace(f'"supervisor_create_time": {ct!r}',
                                 '"supervisor_create_time": NaN'),
        "time-infinity": text.replace(f'"started_at": {ct!r}', '"started_at": Infinity'),
        "run-dir-absolute": record_for(pid, ct, run_dir="/tmp/elsewhere/tiny-local",
                                       log="/tmp/elsewhere/tiny-local/train.log"),
        "run-dir-dotdot": record_for(pid, ct, run_dir="../../tmp/tiny-local",
                                     log="../../tmp/tiny-local/train.log"),
        "log-elsewhere": record_for(pid, ct, log="/etc/passwd"),
        "argv-null": record_for(pid, ct, argv=None),
        "env-list": record_for(pid, ct, env=["A=1"]),
        "spec-id-other": record_for(pid, ct, spec_id="other"),
        "state-unknown": record_for(pid, ct, state="done"),
        "a-list": [rec],
        "not-json": "{\"spec_id\": ",
        "deep": "[" * 100_000,
        "not-utf8": b"\xff\xfe{}",
    }


@private_pid_namespace
def test_hand_edited_records_are_errors_naming_the_file_and_signal_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path / "p")
    monkeypatch.chdir(root)
    victim = bystander()
    ct = victim.create_time()
    try:
        for name, data in _bad_records(victim.pid, ct).items():
            path = plant_record(root, data)
            for args in COMMANDS:
                code, out = run_cli(args)
                where = f"{name}: ftspec {' '.join(args)}"
                assert code == 1, (where, out)
                assert "internal error" not in out and "Traceback" not in out, (where, out)
                assert str(path) in out and "invalid run record" in out, (where, out)
                assert alive(victim.pid) and alive(os.getpid()), where
            assert not (Path("/tmp/elsewhere") / "tiny-local" / "stop-requested").exists()
    finally:
        victim.kill()


@private_pid_namespace
def test_a_valid_record_naming_another_process_signals_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Types and create time right, process alive, own session, this user's: still not
    ftspec's supervisor of this run (its command line says so), so destroy leaves it."""
    root = project(tmp_path / "p")
    monkeypatch.chdir(root)
    victim = bystander()
    try:
        plant_record(root, record_for(victim.pid, victim.create_time()))
        code, out = run_cli(["status", SPEC])
        assert code == 0 and "not ftspec's supervisor" in out, out
        assert "never signalled" in out
        code, out = run_cli(["destroy", SPEC, "--auto-approve"])
        assert code == 0, out
        assert "does not name this run's supervisor" in out, out
        assert "that process is not signalled" in out
        assert alive(victim.pid)
        assert not (root / RECORD).exists()  # no run of it is alive: the record is forgotten
        assert not (root / RUN_DIR / "stop-requested").exists()
    finally:
        victim.kill()


@private_pid_namespace
def test_an_impostor_command_line_outside_its_own_session_is_not_signalled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process whose arguments read like the supervisor's of this run, but which does not
    lead its own session and process group, as every real supervisor does."""
    root = project(tmp_path / "p")
    monkeypatch.chdir(root)
    monkeypatch.setattr(procs, "LAUNCH_SETTLE_S", 0.5)  # not waited for as a launcher
    run_dir = root / RUN_DIR
    impostor = psutil.Popen([sys.executable, "-c", "import time; time.sleep(300)", "-m",
                             procs.SUPERVISOR_MODULE, str(run_dir), "--", "x"])
    try:
        ident = procs.identify(impostor.pid, impostor.create_time(), run_dir)
        assert ident.ref is None and ident.foreign and "session" in ident.problem
        plant_record(root, record_for(impostor.pid, impostor.create_time()))
        code, out = run_cli(["destroy", SPEC, "--auto-approve"])
        assert code == 0 and "that process is not signalled" in out, out
        assert alive(impostor.pid)
    finally:
        impostor.kill()


@private_pid_namespace
def test_stop_never_signals_pid_1_this_process_or_a_foreign_group(tmp_path: Path) -> None:
    """Below the record checks: even a ProcRef with the right create time of pid 1 (here the
    test itself), of ftspec's own process or of another session is never signalled."""
    run_dir = tmp_path / RUN_DIR
    victim = bystander()
    try:
        for pid in (1, os.getpid(), victim.pid):
            ref = procs.ProcRef(pid, psutil.Process(pid).create_time())
            assert procs.identify(pid, ref.create_time, run_dir).ref is None
            assert procs.stop_group(ref, run_dir, grace_s=0.5) is False
        for bad in (math.nan, math.inf, -math.inf):
            ident = procs.identify(victim.pid, bad, run_dir)
            assert ident.ref is None and ident.foreign, bad
        assert procs.identify(0, None, run_dir).ref is None
        assert procs.identify(-1, None, run_dir).ref is None
        assert alive(victim.pid) and alive(1)
    finally:
        victim.kill()


def test_record_spec_id_must_match_its_file(tmp_path: Path) -> None:
    """A record copied over another spec's is refused (no process involved)."""
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.local.state import StateStore

    plant_record(tmp_path, record_for(12345, 1.0e9, spec_id=SPEC_ID))
    (tmp_path / RECORD).rename(tmp_path / ".ftspec/local/other.json")
    with pytest.raises(BackendError, match="does not match the file name"):
        StateStore(tmp_path).read("other")
