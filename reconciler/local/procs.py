"""Process identity and stopping, for runs that outlive the ftspec process that started them.

A pid alone is not an identity: after a reboot or a long time it may name another program.
A ``ProcRef`` is (pid, create time); it is alive only while both still match.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from typing import Any

_CREATE_TIME_SLACK_S = 0.05


@dataclass(frozen=True)
class ProcRef:
    pid: int
    create_time: float

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "create_time": self.create_time}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcRef:
        return cls(int(data["pid"]), float(data["create_time"]))


def ref_of(pid: int) -> ProcRef | None:
    """The identity of a live process, or None if there is none with that pid."""
    import psutil

    try:
        return ProcRef(pid, psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def is_alive(ref: ProcRef) -> bool:
    """True while ``ref`` still names the same, not yet exited, process."""
    import psutil

    _reap(ref.pid)
    try:
        proc = psutil.Process(ref.pid)
        if abs(proc.create_time() - ref.create_time) > _CREATE_TIME_SLACK_S:
            return False  # the pid was reused by another program
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is our own exited child (tests start runs in-process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except (ChildProcessError, OSError):
        pass


def tree(ref: ProcRef) -> list[ProcRef]:
    """``ref`` and all its live descendants (torchrun starts workers in their own sessions,
    so a process-group signal alone does not reach them)."""
    import psutil

    if not is_alive(ref):
        return []
    out = [ref]
    try:
        for child in psutil.Process(ref.pid).children(recursive=True):
            try:
                out.append(ProcRef(child.pid, child.create_time()))
            except psutil.Error:
                continue
    except psutil.Error:
        pass
    return out


def _signal_all(pgid: int, refs: list[ProcRef], sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for ref in refs:
        if is_alive(ref):
            try:
                os.kill(ref.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def stop_group(leader: ProcRef, pgid: int, *, grace_s: float = 10.0) -> bool:
    """SIGTERM the run's process group and every descendant, SIGKILL what is left after
    ``grace_s``. Returns True when something was running. Never signals a reused pid."""
    if not is_alive(leader):
        return False
    refs = tree(leader)
    _signal_all(pgid, refs, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not any(is_alive(r) for r in refs):
            return True
        time.sleep(0.1)
    refs += [r for r in tree(leader) if r not in refs]
    _signal_all(pgid, refs, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(is_alive(r) for r in refs):
        time.sleep(0.05)
    return True
