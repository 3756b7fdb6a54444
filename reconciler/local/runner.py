"""Start and stop one local run (the detached supervisor and its process group)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError, Reporter
from ftspec.reconciler.local import procs
from ftspec.reconciler.local.launch import LAUNCH_DIR
from ftspec.reconciler.local.state import RunRecord
from ftspec.reconciler.local.supervise import (
    CHILD_FILE,
    EXIT_FILE,
    STOP_FILE,
    SUPERVISOR_FILE,
    read_json,
)

_CONTROL_FILES = (SUPERVISOR_FILE, CHILD_FILE, EXIT_FILE, STOP_FILE)
_ACCEPT_TIMEOUT_S = 30.0


def start(root: Path, after: dict[str, Any], reporter: Reporter) -> RunRecord:
    """Write the launch files, start the supervisor detached, return the run's record once
    the training command has been started (the job is accepted)."""
    run_dir = root / after["run_dir"]
    launch_dir = run_dir / LAUNCH_DIR
    launch_dir.mkdir(parents=True, exist_ok=True)
    for name in _CONTROL_FILES:
        (run_dir / name).unlink(missing_ok=True)
    for name, content in after["files"].items():
        path = launch_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    log = root / after["log"]
    if log.exists():
        os.replace(log, log.with_name(log.name + ".prev"))
    env = {**os.environ, **after["env"]}
    cmd = [sys.executable, "-m", "ftspec.reconciler.local.supervise", str(run_dir), "--",
           *after["argv"]]
    with log.open("ab") as log_file:
        launcher = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=root, env=env)
        try:
            code = launcher.wait(timeout=_ACCEPT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            launcher.kill()
            code = -1
    sup = read_json(run_dir / SUPERVISOR_FILE)
    if code != 0 or sup is None:
        raise BackendError(f"the local run did not start; see {log}", retryable=True)
    record = RunRecord(
        spec_id=after["spec_id"], spec_hash=str(after.get("spec_hash", "")), spec_file=after["spec_file"],
        launcher=after["launcher"], argv=list(after["argv"]), env=dict(after["env"]),
        cwd=str(root), run_dir=after["run_dir"], log=after["log"],
        started_at=float(sup["started_at"]), supervisor_pid=int(sup["pid"]),
        supervisor_create_time=float(sup["create_time"]), pgid=int(sup["pgid"]),
        summary=dict(after.get("summary", {})), applied=str(after.get("applied", "")),
    )
    reporter.event(f"started {record.argv[0].rsplit('/', 1)[-1]} (pid {record.supervisor_pid}, "
                   f"log {record.log})", pid=record.supervisor_pid, log=record.log)
    deadline = time.monotonic() + _ACCEPT_TIMEOUT_S
    while time.monotonic() < deadline:
        if (run_dir / CHILD_FILE).exists() or (run_dir / EXIT_FILE).exists():
            break
        time.sleep(0.05)
    return record


def stop(root: Path, record: RunRecord, reporter: Reporter, grace_s: float = 10.0) -> bool:
    """Stop the run's whole process group (SIGTERM, then SIGKILL after ``grace_s``)."""
    leader = procs.ProcRef(record.supervisor_pid, record.supervisor_create_time)
    if not procs.is_alive(leader):
        return False
    run_dir = root / record.run_dir
    (run_dir / STOP_FILE).write_text(f"{os.getpid()} {time.time()}\n", encoding="utf-8")
    reporter.event(f"stopping the run of {record.spec_id} (process group {record.pgid})",
                   pid=record.supervisor_pid)
    procs.stop_group(leader, record.pgid, grace_s=grace_s)
    if procs.is_alive(leader):
        raise BackendError(f"the run of {record.spec_id} (pid {record.supervisor_pid}) did not "
                           "stop", retryable=True)
    reporter.event(f"stopped the run of {record.spec_id}")
    return True

