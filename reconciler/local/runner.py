"""Start and stop one local run (the detached supervisor and its process group).

``start`` writes an intent record (``state: starting``) before the supervisor can start,
so an ``apply`` killed at any point leaves a record the next one finishes (``settle``)
instead of starting a second run. ``stop`` signals only supervisors the OS proves to be
this run's (``procs.identify``), even when the run folder was deleted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError, Reporter
from ftspec.reconciler.local import procs
from ftspec.reconciler.local.launch import LAUNCH_DIR
from ftspec.reconciler.local.record import LOG_NAME, STARTED, STARTING, RunRecord
from ftspec.reconciler.local.slots import ENV as QUEUE_ENV
from ftspec.reconciler.local.slots import QUEUE_DIR, QUEUED_FILE, Queue
from ftspec.reconciler.local.state import StateStore, guarded, open_run_dir
from ftspec.reconciler.local.supervise import (
    CHILD_FILE,
    EXIT_FILE,
    STOP_FILE,
    SUPERVISOR_FILE,
    USAGE_FILE,
    SupervisorInfo,
    read_json,
)

_CONTROL_FILES = (SUPERVISOR_FILE, CHILD_FILE, EXIT_FILE, USAGE_FILE, STOP_FILE, QUEUED_FILE)
_ACCEPT_TIMEOUT_S = 30.0


def launch_file(root: Path, run_dir: str, name: str) -> str | None:
    """The text of a launch file a recorded run was started with (None when gone, a link,
    or unreadable: it is only compared with the new one)."""
    try:
        run = open_run_dir(root, run_dir)
        if run is None:
            return None
        with run:
            raw = run.read(f"{LAUNCH_DIR}/{name}")
    except OSError:
        return None
    return None if raw is None else raw.decode("utf-8", errors="replace")


def _prepare(root: Path, after: dict[str, Any]) -> int:
    """Fresh launch files and an empty log in the run folder; the log's descriptor."""
    run = open_run_dir(root, after["run_dir"], create=True)
    assert run is not None
    with run:
        for name in _CONTROL_FILES:
            run.unlink(name)
        with run.sub(LAUNCH_DIR, create=True) as launch:
            for name, content in after["files"].items():
                launch.write(name, content, mode=0o600, create_dirs=True)
        if run.exists(LOG_NAME):
            run.rename(LOG_NAME, LOG_NAME + ".prev")
        return run.open_fd(LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND)


def _queue(store: StateStore, after: dict[str, Any]) -> Queue | None:
    """The sweep queue ``after`` runs in (``LocalBackend._after``: ``queue``), its slot
    folder made; None outside a sweep."""
    spec = after.get("queue")
    if not isinstance(spec, dict):
        return None
    with guarded(store.dir), store.state_dir(f"{QUEUE_DIR}/{spec['sweep']}",
                                             create=True) as folder:
        where = str(folder.path)
    position = int(spec["position"])
    return Queue(where, int(spec["max_parallel"]), position, max(int(spec["size"]), position + 1))


def start(store: StateStore, after: dict[str, Any], reporter: Reporter) -> RunRecord:
    """Write the launch files and the intent record, start the supervisor detached, record
    it; return once the training command has been started or queued behind its sweep's
    other points (the job is accepted)."""
    root = store.root
    run_abs = root / after["run_dir"]
    with guarded(run_abs):
        log_fd = _prepare(root, after)
    try:
        intent = RunRecord(
            spec_id=after["spec_id"], spec_hash=str(after.get("spec_hash", "")),
            spec_file=after["spec_file"], launcher=after["launcher"],
            argv=list(after["argv"]), env=dict(after["env"]), cwd=str(root),
            run_dir=after["run_dir"], log=after["log"], started_at=time.time(),
            supervisor_pid=None, supervisor_create_time=None, pgid=None,
            summary=dict(after.get("summary", {})), applied=str(after.get("applied", "")),
            name=str(after.get("name", "")),
            state=STARTING)
        store.write(intent)
        env = {**os.environ, **after["env"]}
        queue = _queue(store, after)
        if queue is not None:  # for the supervisor only: it takes it out of its environment
            env[QUEUE_ENV] = queue.to_env()
        cmd = [sys.executable, "-m", procs.SUPERVISOR_MODULE, str(run_abs), "--",
               *after["argv"]]
        launcher = subprocess.Popen(cmd, stdout=log_fd, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=root, env=env)
    finally:
        os.close(log_fd)
    try:
        code = launcher.wait(timeout=_ACCEPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        launcher.kill()
        code = -1
    record = settle(store, intent)
    if code != 0 or record.state != STARTED:
        raise BackendError(f"the local run did not start; see {root / after['log']}",
                           retryable=True)
    program = record.argv[0].rsplit('/', 1)[-1]
    if _accepted(root, record) == QUEUED_FILE:
        assert queue is not None
        reporter.event(f"queued {program}: point {queue.position + 1} of {queue.size} waits for "
                       f"a slot (pid {record.supervisor_pid}, log {record.log})",
                       pid=record.supervisor_pid, log=record.log, queued=True)
    else:
        reporter.event(f"started {program} (pid {record.supervisor_pid}, log {record.log})",
                       pid=record.supervisor_pid, log=record.log)
    return record


def _accepted(root: Path, record: RunRecord) -> str | None:
    """Wait until the supervisor started the training command, recorded its exit, or queued
    the run behind its sweep's other points: which of those files it wrote (None: none
    within the timeout)."""
    run = open_run_dir(root, record.run_dir)
    if run is None:
        return None
    with run:
        deadline = time.monotonic() + _ACCEPT_TIMEOUT_S
        while time.monotonic() < deadline:
            for name in (CHILD_FILE, EXIT_FILE, QUEUED_FILE):
                if run.exists(name):
                    return name
            time.sleep(0.05)
    return None


def settle(store: StateStore, record: RunRecord) -> RunRecord:
    """Finish an intent record (``state: starting``, left by an ``apply`` killed while it
    started the run): record the supervisor the OS proves to be this run's, from its own
    ``supervisor.json`` or from the process table. Unchanged when there is none."""
    if record.state != STARTING:
        return record
    root = store.root
    run_abs = root / record.run_dir
    found: procs.ProcRef | None = None
    started_at = record.started_at
    run = open_run_dir(root, record.run_dir)
    if run is not None:
        with run:
            sup = SupervisorInfo.parse(read_json(run, SUPERVISOR_FILE))
        if sup is not None:
            ident = procs.identify(sup.pid, sup.create_time, run_abs)
            if ident.ref is not None or (not ident.foreign and sup.started_at >= started_at):
                # proven, or already ended (its exit is read from exit.json)
                found, started_at = procs.ProcRef(sup.pid, sup.create_time), sup.started_at
    if found is None:
        live = procs.find_supervisors(run_abs)
        if not live:
            return record
        found = min(live, key=lambda r: r.create_time)
        started_at = found.create_time
    done = replace(record, state=STARTED, supervisor_pid=found.pid,
                   supervisor_create_time=found.create_time, pgid=found.pid,
                   started_at=started_at)
    store.write(done)
    return done


def stop(root: Path, record: RunRecord, reporter: Reporter, grace_s: float = 10.0) -> bool:
    """Stop the run's proven supervisors and their process groups (SIGTERM, then SIGKILL
    after ``grace_s``). A record naming another process signals nothing of it."""
    run_abs = root / record.run_dir
    sups, ident = procs.supervisors_of(record.supervisor_pid, record.supervisor_create_time,
                                       run_abs)
    if ident is not None and ident.foreign:
        reporter.event(f"{record.spec_id}: the run record does not name this run's supervisor "
                       f"({ident.problem}); that process is not signalled")
    if not sups:
        return False
    run = open_run_dir(root, record.run_dir)
    if run is not None:  # a deleted run folder does not keep the run from being stopped
        with guarded(run_abs), run:
            run.write(STOP_FILE, f"{os.getpid()} {time.time()}\n")
    for sup in sups:
        reporter.event(f"stopping the run of {record.spec_id} (process group {sup.pid})",
                       pid=sup.pid)
        procs.stop_group(sup, run_abs, grace_s=grace_s)
    left = [s.pid for s in sups if procs.is_alive(s)]
    if left:
        raise BackendError(f"the run of {record.spec_id} (pid {left[0]}) did not stop",
                           retryable=True)
    reporter.event(f"stopped the run of {record.spec_id}")
    return True
