"""What a recorded local run is doing now: phase, exit code, progress, log tail."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.reconciler.failure import reason
from ftspec.reconciler.local import procs
from ftspec.reconciler.local.record import RunRecord
from ftspec.reconciler.local.slots import QUEUED_FILE
from ftspec.reconciler.local.state import guarded, open_run_dir
from ftspec.reconciler.local.supervise import CHILD_FILE, EXIT_FILE, ExitInfo, read_json
from ftspec.reconciler.logread import read_tail, tail_lines
from ftspec.reconciler.measured import short_of_plan
from ftspec.reconciler.model import Phase
from ftspec.reconciler.progress import Tracker, clean_lines, status_metrics, track_text

TERMINAL = (Phase.SUCCEEDED, Phase.FAILED)

LOG_TAIL_LINES = 20


@dataclass(frozen=True)
class RunView:
    record: RunRecord
    phase: Phase
    message: str
    active: bool
    """The supervisor (and so the run) is still alive."""
    returncode: int | None
    signal: str | None
    stop_requested: bool
    progress: Tracker
    ended_at: float | None
    log_tail: list[str] = field(default_factory=list)
    pid: int | None = None
    """The supervisor's pid: the live one the OS proved, else the recorded one."""
    reason: dict[str, Any] = field(default_factory=dict)
    """Why it failed (``failure.reason``), or why a run that succeeded is invalid
    (``failure.short_run``: it trained fewer steps than planned); else empty."""
    run_started_at: float | None = None
    """When the training command started (a sweep point may wait queued for a slot after
    its supervisor started: ``slots.py``); None while it has not."""
    queued: dict[str, Any] | None = None
    """The sweep queue the point waited in (``queued.json``: max_parallel, position, size,
    since); None when it never had to wait."""

    def platform(self) -> dict[str, Any]:
        r = self.record
        return {
            "pid": self.pid, "pgid": self.pid, "started_at": r.started_at,
            "run_started_at": self.run_started_at, "queued": self.queued,
            "ended_at": self.ended_at,
            "spec_hash": r.spec_hash, "argv": r.argv, "log": r.log, "run_dir": r.run_dir,
            "exit_code": self.returncode, "signal": self.signal,
            "stopped_by_ftspec": self.stop_requested, "log_tail": self.log_tail,
        }

    def metrics(self) -> dict[str, Any]:
        end = self.ended_at if self.ended_at is not None else time.time()
        start = self.run_started_at or self.record.started_at
        return status_metrics(self.progress, elapsed_s=max(0.0, end - start),
                              ended=self.phase in TERMINAL)


@dataclass(frozen=True)
class _Files:
    """What the supervisor wrote in the run folder."""

    ended: ExitInfo | None = None
    started: bool = False
    """The training command was started (``child.json``)."""
    started_at: float | None = None
    queued: dict[str, Any] | None = None


def _time(data: dict[str, Any] | None, key: str) -> float | None:
    value = None if data is None else data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _queued(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """``queued.json`` with its fields checked (None when absent or malformed)."""
    if data is None:
        return None
    out: dict[str, Any] = {}
    for key in ("max_parallel", "position", "size"):
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 64:
            return None
        out[key] = value
    out["since"] = _time(data, "since")
    return out


def _read_run_dir(root: Path, record: RunRecord) -> _Files:
    """The run's recorded exit (None while none is written), whether (and when) its child
    started, and its wait in a sweep's queue."""
    with guarded(root / record.run_dir, "read"):
        run = open_run_dir(root, record.run_dir)
        if run is None:
            return _Files()
        with run:
            child = read_json(run, CHILD_FILE)
            return _Files(ExitInfo.parse(read_json(run, EXIT_FILE)), run.exists(CHILD_FILE),
                          _time(child, "started_at"), _queued(read_json(run, QUEUED_FILE)))


def _queue_words(queued: dict[str, Any]) -> str:
    n = queued["max_parallel"]
    return (f"point {queued['position'] + 1} of {queued['size']} waits for a slot (at most "
            f"{n} point{'s' if n != 1 else ''} at once: sweep.max_parallel)")


def observe(record: RunRecord, root: Path, tail: int = LOG_TAIL_LINES,
            settings: dict[str, Any] | None = None) -> RunView:
    """``settings``: the job's totals for the progress tracker (``Tracker`` fields)."""
    run_abs = root / record.run_dir
    files = _read_run_dir(root, record)
    sups, ident = procs.supervisors_of(record.supervisor_pid, record.supervisor_create_time,
                                       run_abs, scan=files.ended is None)
    active = bool(sups)
    if not active and files.ended is None:
        # the supervisor writes its exit file before it exits: one that ended between the
        # read above and the process scan has left the file, so read it again
        files = _read_run_dir(root, record)
    ended, started, queued = files.ended, files.started, files.queued
    pid = sups[0].pid if sups else record.supervisor_pid
    text = read_tail(root / record.log)
    progress = track_text(text, **(settings or {}))
    log_tail = tail_lines(text, tail)
    returncode = signal = None
    ended_at: float | None = None
    stop_requested = False
    if ended is not None:
        ended_at = ended.ended_at
        returncode = ended.returncode
        signal = ended.signal
        stop_requested = ended.stop_requested
    if active and ended is None and not started and queued is not None:
        phase = Phase.PENDING
        message = f"queued (pid {pid}): {_queue_words(queued)}"
    elif active and ended is None:
        phase = Phase.RUNNING if started else Phase.PENDING
        last = progress.last
        where = (f"step {last.step}" + (f", loss {last.loss:g}" if last.loss is not None else "")
                 if last is not None else "starting")
        message = f"running (pid {pid}): {where}"
    elif ended is not None and not started and ended.message:
        phase = Phase.FAILED
        who = " (stopped by ftspec)" if ended.stop_requested else ""
        message = f"failed: {ended.message}{who}"
    elif ended is not None:
        if returncode == 0:
            phase = Phase.SUCCEEDED
            final = progress.last.loss if progress.last is not None else None
            message = "succeeded" + (f", final loss {final:g}" if final is not None else "")
        else:
            phase = Phase.FAILED
            how = f"killed by {signal}" if signal else f"exit code {returncode}"
            who = " (stopped by ftspec)" if stop_requested else ""
            message = f"failed: {how}{who}"
    elif ident is not None and ident.foreign:
        phase = Phase.FAILED
        message = (f"failed: no run alive, and the run record was changed outside ftspec: "
                   f"{ident.problem} (that process is never signalled)")
    elif pid is None:
        phase = Phase.FAILED
        message = "failed: the run never started (its apply was interrupted, or see its log)"
    elif queued is not None and not started:
        phase = Phase.FAILED
        message = (f"failed: never started: its supervisor (pid {pid}) was killed while "
                   f"{_queue_words(queued)}")
    else:
        phase = Phase.FAILED
        message = (f"failed: the run's supervisor (pid {pid}) is gone without "
                   "recording an exit code (killed with SIGKILL, or the machine restarted)")
    why: dict[str, Any] = {}
    if phase is Phase.FAILED:
        why = reason(exit_code=returncode, signal=signal, stopped_by_ftspec=stop_requested,
                     log=clean_lines(text))
    elif phase is Phase.SUCCEEDED:
        why = short_of_plan(text, progress, record.summary)  # planned when applied
    return RunView(record, phase, message, active and ended is None, returncode, signal,
                   stop_requested, progress, ended_at, log_tail, pid, why,
                   files.started_at, queued)

