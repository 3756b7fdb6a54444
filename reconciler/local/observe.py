"""What a recorded local run is doing now: phase, exit code, progress, log tail."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.reconciler.failure import reason
from ftspec.reconciler.local import procs
from ftspec.reconciler.local.state import RunRecord
from ftspec.reconciler.local.supervise import CHILD_FILE, EXIT_FILE, read_json
from ftspec.reconciler.logread import read_tail, tail_lines
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
    reason: dict[str, Any] = field(default_factory=dict)
    """Why it failed (``failure.reason``); empty unless the phase is Failed."""

    @property
    def supervisor(self) -> procs.ProcRef:
        return procs.ProcRef(self.record.supervisor_pid, self.record.supervisor_create_time)

    def platform(self) -> dict[str, Any]:
        r = self.record
        return {
            "pid": r.supervisor_pid, "pgid": r.pgid, "started_at": r.started_at,
            "ended_at": self.ended_at,
            "spec_hash": r.spec_hash, "argv": r.argv, "log": r.log, "run_dir": r.run_dir,
            "exit_code": self.returncode, "signal": self.signal,
            "stopped_by_ftspec": self.stop_requested, "log_tail": self.log_tail,
        }

    def metrics(self) -> dict[str, Any]:
        end = self.ended_at if self.ended_at is not None else time.time()
        return status_metrics(self.progress, elapsed_s=end - self.record.started_at,
                              ended=self.phase in TERMINAL)


def observe(record: RunRecord, root: Path, tail: int = LOG_TAIL_LINES,
            settings: dict[str, Any] | None = None) -> RunView:
    """``settings``: the job's totals for the progress tracker (``Tracker`` fields)."""
    run_dir = root / record.run_dir
    active = procs.is_alive(procs.ProcRef(record.supervisor_pid, record.supervisor_create_time))
    ended = read_json(run_dir / EXIT_FILE)
    text = read_tail(root / record.log)
    progress = track_text(text, **(settings or {}))
    log_tail = tail_lines(text, tail)
    returncode = signal = None
    ended_at: float | None = None
    stop_requested = False
    if ended is not None:
        ended_at = ended.get("ended_at")
        returncode = int(ended["returncode"])
        signal = ended.get("signal")
        stop_requested = bool(ended.get("stop_requested"))
    if active and ended is None:
        started = (run_dir / CHILD_FILE).exists()
        phase = Phase.RUNNING if started else Phase.PENDING
        last = progress.last
        where = (f"step {last.step}" + (f", loss {last.loss:g}" if last.loss is not None else "")
                 if last is not None else "starting")
        message = f"running (pid {record.supervisor_pid}): {where}"
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
    else:
        phase = Phase.FAILED
        message = (f"failed: the run's supervisor (pid {record.supervisor_pid}) is gone without "
                   "recording an exit code (killed with SIGKILL, or the machine restarted)")
    why: dict[str, Any] = {}
    if phase is Phase.FAILED:
        why = reason(exit_code=returncode, signal=signal, stopped_by_ftspec=stop_requested,
                     log=clean_lines(text))
    return RunView(record, phase, message, active and ended is None, returncode, signal,
                   stop_requested, progress, ended_at, log_tail, why)
