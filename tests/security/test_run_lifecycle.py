"""No orphan after a kill, a deleted run folder, a full disk (issue 20, item 3).

On main an ``apply`` SIGKILLed after the run started but before its record was written left
the run untracked and the next ``apply`` started a second one; a run folder deleted while
the run lived made ``destroy`` fail with ``internal error: FileNotFoundError``; a full disk
gave ``internal error: OSError``. The runs here are real supervisors of ``sleep``; every
test runs in a private PID (and mount) namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ftspec.reconciler.local import procs
from ftspec.reconciler.local.backend import LocalBackend
from ftspec.reconciler.local.observe import observe
from ftspec.reconciler.local.record import STARTED, STARTING, parse_record
from ftspec.reconciler.model import Action, Phase
from helpers.pidns import mount_tmpfs, private_pid_namespace

from security.localstate import (
    RECORD,
    RUN_DIR,
    SPEC,
    SPEC_ID,
    Events,
    apply_change,
    project,
    run_cli,
    sleep_after,
    supervise,
    wait_gone,
)

_APPLY_IN_CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from security.localstate import apply_change, sleep_after
from ftspec.reconciler.local.backend import LocalBackend
from ftspec.reconciler.model import Action
apply_change(LocalBackend(Path({root!r})), Action.CREATE, sleep_after())
"""


def _supervisors(root: Path) -> list[procs.ProcRef]:
    return procs.find_supervisors(root / RUN_DIR)


@private_pid_namespace
def test_an_intent_record_left_by_a_killed_apply_is_finished_not_run_twice(
        tmp_path: Path) -> None:
    """The state a SIGKILL between the supervisor's start and the final record leaves: the
    intent record and a live supervisor. The run is seen as running and the next apply
    records it instead of starting another."""
    root = project(tmp_path / "p")
    backend = LocalBackend(root, stop_grace_s=2)
    after = sleep_after()
    intent = {**{k: after[k] for k in ("spec_id", "spec_hash", "spec_file", "launcher",
                                       "argv", "env", "run_dir", "log", "summary")},
              "cwd": str(root), "started_at": time.time() - 1, "supervisor_pid": None,
              "supervisor_create_time": None, "pgid": None, "state": STARTING, "version": 1}
    (root / RUN_DIR).mkdir(parents=True)
    backend.store.write(parse_record(intent, SPEC_ID))
    supervise(root, RUN_DIR, after["argv"])
    (sup,) = _supervisors(root)
    view = observe(backend.store.read(SPEC_ID), root)  # type: ignore[arg-type]
    assert view.active and view.pid == sup.pid and view.phase in (Phase.PENDING,
                                                                  Phase.RUNNING)
    assert not apply_change(backend, Action.NOOP, after).failed  # a plan of it: no-op
    record = backend.store.read(SPEC_ID)
    assert record is not None and record.state == STARTED
    assert (record.supervisor_pid, record.supervisor_create_time) == (sup.pid,
                                                                      sup.create_time)
    assert _supervisors(root) == [sup]
    assert not apply_change(backend, Action.DELETE, None).failed
    assert wait_gone(sup.pid) and _supervisors(root) == []


def _with_intent_record(root: Path) -> LocalBackend:
    """A backend over ``root`` holding only the intent record of a run (no supervisor)."""
    backend = LocalBackend(root)
    after = sleep_after()
    backend.store.write(parse_record({
        **{k: after[k] for k in ("spec_id", "spec_hash", "spec_file", "launcher", "argv",
                                 "env", "run_dir", "log")},
        "cwd": str(root), "started_at": time.time(), "state": STARTING}, SPEC_ID))
    return backend


@private_pid_namespace
def test_an_intent_record_without_a_run_reads_as_never_started(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    backend = _with_intent_record(root)
    view = observe(backend.store.read(SPEC_ID), root)  # type: ignore[arg-type]
    assert view.phase is Phase.FAILED and "never started" in view.message
    assert not view.active


def test_a_run_ending_between_the_exit_read_and_the_process_scan_reads_as_ended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The supervisor writes its exit file and exits after ``observe`` found no exit file
    but before its process scan: seen in CI as 'supervisor gone without recording an exit
    code' for a run that trained every step. The exit file is read again once no supervisor
    is alive."""
    root = project(tmp_path / "p")
    backend = _with_intent_record(root)
    (root / RUN_DIR).mkdir(parents=True)

    def ends_now(*_args: object, **_kwargs: object) -> tuple[list[procs.ProcRef], None]:
        (root / RUN_DIR / "exit.json").write_text(json.dumps(
            {"returncode": 0, "signal": None, "ended_at": time.time(),
             "stop_requested": False}))
        return [], None

    monkeypatch.setattr(procs, "supervisors_of", ends_now)
    view = observe(backend.store.read(SPEC_ID), root)  # type: ignore[arg-type]
    assert view.phase is Phase.SUCCEEDED and view.returncode == 0, view.message
    assert not view.active


@private_pid_namespace
def test_apply_sigkilled_while_starting_then_apply_again_never_runs_twice(
        tmp_path: Path) -> None:
    """A real kill: the applying process is SIGKILLed as soon as its supervisor exists
    (before or after the final record, whichever the timing gives); the next apply of the
    same spec must leave exactly one supervisor of the run, recorded."""
    root = project(tmp_path / "p")
    tests = str(Path(__file__).resolve().parents[1])
    child = subprocess.Popen([sys.executable, "-c",
                              _APPLY_IN_CHILD.format(tests=tests, root=str(root))])
    deadline = time.monotonic() + 60
    while not (root / RUN_DIR / "supervisor.json").exists():
        assert time.monotonic() < deadline and child.poll() is None, "the run did not start"
        time.sleep(0.002)
    child.send_signal(signal.SIGKILL)
    child.wait()
    backend = LocalBackend(root, stop_grace_s=2)
    record = backend.store.read(SPEC_ID)
    assert record is not None  # the intent at least: written before the supervisor starts
    view = observe(record, root)
    assert view.active, view.message  # so plan says no-op, never a second create
    assert not apply_change(backend, Action.NOOP, sleep_after()).failed
    (sup,) = _supervisors(root)
    record = backend.store.read(SPEC_ID)
    assert record is not None and record.state == STARTED and record.supervisor_pid == sup.pid
    assert not apply_change(backend, Action.DELETE, None).failed
    assert wait_gone(sup.pid)


@private_pid_namespace
def test_destroy_stops_a_run_whose_folder_was_deleted(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path / "p")
    backend = LocalBackend(root, stop_grace_s=2)
    assert not apply_change(backend, Action.CREATE, sleep_after()).failed
    record = backend.store.read(SPEC_ID)
    assert record is not None and record.supervisor_pid is not None
    pid = record.supervisor_pid
    shutil.rmtree(root / RUN_DIR)
    monkeypatch.chdir(root)
    code, out = run_cli(["status", SPEC])
    assert code == 0 and "running" in out and "Traceback" not in out, out
    events = Events()
    assert not apply_change(backend, Action.DELETE, None, events).failed, str(events)
    assert "stopped the run of tiny-local" in str(events)
    assert wait_gone(pid) and _supervisors(root) == []
    assert not (root / RECORD).exists()


@private_pid_namespace
def test_a_full_disk_is_one_line_naming_the_folder(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The project on a tiny tmpfs filled to the last byte: apply and destroy say which
    folder could not be written, and why, in one error without a traceback. (``apply``'s
    plan-time preflight may see it first: no room for the run's checkpoints under
    ``.ftspec/runs``, located at ``output.uri``; the failed state write itself is
    ``test_a_failed_record_write_names_the_records_folder``.)"""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "256k")
    root = project(disk / "p")
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    with pytest.raises(OSError):
        (disk / "probe").write_bytes(b"x")  # full
    monkeypatch.chdir(root)
    for args in (["apply", SPEC, "--auto-approve"], ["destroy", SPEC, "--auto-approve"]):
        code, out = run_cli(args)
        assert code == 1, out
        full = "No space left on device" in out or (
            args[0] == "apply" and "error: output.uri: the run will save about" in out
            and "0.0 MiB free" in out)
        assert full and str(root / ".ftspec") in out, out
        assert "Traceback" not in out and "internal error" not in out, out
    assert _supervisors(root) == []


def test_a_failed_record_write_names_the_records_folder(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC at the record's write (the disk filled between the lock and the record)."""
    import errno

    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.local.state import StateStore

    from security.localstate import record_for

    store = StateStore(tmp_path)
    real_write = os.write

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(BackendError) as caught:
        store.write(parse_record(record_for(4242, 1.0e9), SPEC_ID))
    monkeypatch.setattr(os, "write", real_write)
    assert str(caught.value) == (f"cannot write the local state under {tmp_path / '.ftspec/local'}"
                                 ": No space left on device")
    assert [p.name for p in (tmp_path / ".ftspec/local").iterdir()] == []  # no temp left
