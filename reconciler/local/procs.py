"""Process identity and stopping, for runs that outlive the ftspec process that started them.

Nothing read from a file decides which processes are signalled. A run's supervisor is
proven from the OS (``identify``): pid > 1, alive (not a zombie), owned by this user, the
leader of its own session and process group (``setsid``), its command line
``… -m ftspec.reconciler.local.supervise <this run's folder> -- …``, and, when a record
gives one, a finite create time equal to the OS's (so a reused pid is not taken for it).
Only a proven supervisor's process group and its descendants are signalled; anything else
is reported as stale (gone) or foreign (some other process) and left alone.
"""

from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUPERVISOR_MODULE = "ftspec.reconciler.local.supervise"
_CREATE_TIME_SLACK_S = 0.05


@dataclass(frozen=True)
class ProcRef:
    """A process: (pid, create time). A pid alone may later name another program."""

    pid: int
    create_time: float


@dataclass(frozen=True)
class Identity:
    """What the OS says about a process a record names."""

    ref: ProcRef | None
    """Set only when the process is proven to be this run's supervisor."""
    problem: str = ""
    """Why not: empty when proven."""
    foreign: bool = False
    """A live process that is not this run's supervisor (else: gone, or its pid reused)."""


def supervisor_cmdline(cmdline: list[str], run_dir: Path) -> bool:
    """``cmdline`` is the supervisor's (``python … -m MODULE RUN_DIR -- ARGV``) of
    ``run_dir``."""
    want = os.path.normpath(str(run_dir))
    for i in range(1, len(cmdline) - 3):
        if cmdline[i] == "-m" and cmdline[i + 1] == SUPERVISOR_MODULE:
            return (os.path.normpath(cmdline[i + 2]) == want and cmdline[i + 3] == "--"
                    and len(cmdline) > i + 4)
    return False


def identify(pid: int, create_time: float | None, run_dir: Path) -> Identity:
    """Prove that ``pid`` is ftspec's supervisor of ``run_dir`` (see the module doc)."""
    import psutil

    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        return Identity(None, f"pid {pid!r} can be no run's supervisor", foreign=True)
    if create_time is not None and not (isinstance(create_time, (int, float))
                                        and math.isfinite(create_time)):
        return Identity(None, f"create time {create_time!r} is not a time", foreign=True)
    _reap(pid)
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            real = proc.create_time()
            if create_time is not None and abs(real - create_time) > _CREATE_TIME_SLACK_S:
                return Identity(None, f"pid {pid} now names another process (its create "
                                      "time differs): the run ended")
            if proc.status() == psutil.STATUS_ZOMBIE:
                return Identity(None, f"pid {pid} has ended")
            uids = proc.uids()
            cmdline = proc.cmdline()
        if uids.real != os.getuid() or uids.effective != os.geteuid():
            return Identity(None, f"pid {pid} belongs to another user (uid {uids.real})",
                            foreign=True)
        if os.getpgid(pid) != pid or os.getsid(pid) != pid:
            return Identity(None, f"pid {pid} does not lead its own session and process "
                                  "group, as a run's supervisor does", foreign=True)
        if not supervisor_cmdline(cmdline, run_dir):
            return Identity(None, f"pid {pid} is not ftspec's supervisor of {run_dir} (its "
                                  f"command is {_short(cmdline)})", foreign=True)
    except (psutil.NoSuchProcess, ProcessLookupError):
        return Identity(None, f"no process has pid {pid}: the run ended")
    except (psutil.Error, OSError) as exc:
        return Identity(None, f"pid {pid} cannot be inspected ({type(exc).__name__})",
                        foreign=True)
    return Identity(ProcRef(pid, real))


def _short(cmdline: list[str]) -> str:
    text = " ".join(cmdline) or "unknown"
    return repr(text if len(text) <= 80 else text[:77] + "...")


LAUNCH_SETTLE_S = 15.0
"""How long a launcher may take to detach its supervisor (``supervise._DETACH_TIMEOUT_S``)."""


def find_supervisors(run_dir: Path) -> list[ProcRef]:
    """Every live, proven supervisor of ``run_dir``, found in the process table (for a
    record that names none, or names a process that is not it). A launcher of this run
    still detaching its supervisor (same command line, not yet a session leader, younger
    than ``LAUNCH_SETTLE_S``) is waited for, so a run being started is never missed."""
    import psutil

    while True:
        found, wait_until = [], 0.0
        for proc in psutil.process_iter(["cmdline", "create_time"]):
            try:
                cmdline = proc.info["cmdline"] or []
                created = float(proc.info["create_time"] or 0.0)
            except (psutil.Error, TypeError, ValueError):
                continue
            if SUPERVISOR_MODULE not in cmdline or not supervisor_cmdline(cmdline, run_dir):
                continue
            ident = identify(proc.pid, None, run_dir)
            if ident.ref is not None:
                found.append(ident.ref)
            elif ident.foreign and proc.pid != os.getpid() and _same_user(proc):
                wait_until = max(wait_until, created + LAUNCH_SETTLE_S)
        if time.time() >= wait_until:
            return found
        time.sleep(0.1)


def _same_user(proc: Any) -> bool:
    import psutil

    try:
        return bool(proc.uids().real == os.getuid())
    except psutil.Error:
        return False


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


def _descendants(leader: ProcRef) -> list[ProcRef]:
    """The live descendants of a proven leader (torchrun starts workers in their own
    sessions, so a process-group signal alone does not reach them)."""
    import psutil

    out = []
    try:
        for child in psutil.Process(leader.pid).children(recursive=True):
            try:
                out.append(ProcRef(child.pid, child.create_time()))
            except psutil.Error:
                continue
    except psutil.Error:
        pass
    return out


def _signal(leader: ProcRef, run_dir: Path, refs: list[ProcRef], sig: signal.Signals) -> None:
    """Signal the leader's group (only while the leader is still proven) and ``refs``."""
    ident = identify(leader.pid, leader.create_time, run_dir)
    if ident.ref is not None and leader.pid > 1:
        try:
            os.killpg(leader.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for ref in refs:
        if ref.pid > 1 and ref.pid != os.getpid() and is_alive(ref):
            try:
                os.kill(ref.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def stop_group(leader: ProcRef, run_dir: Path, *, grace_s: float = 10.0) -> bool:
    """SIGTERM a proven supervisor's process group and every descendant, SIGKILL what is
    left after ``grace_s``. Returns True when something was running. Signals nothing unless
    ``leader`` is proven (``identify``) to be the supervisor of ``run_dir``."""
    if identify(leader.pid, leader.create_time, run_dir).ref is None:
        return False
    refs = [leader, *_descendants(leader)]
    _signal(leader, run_dir, refs, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not any(is_alive(r) for r in refs):
            return True
        time.sleep(0.1)
    if is_alive(leader):
        refs += [r for r in _descendants(leader) if r not in refs]
    _signal(leader, run_dir, refs, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(is_alive(r) for r in refs):
        time.sleep(0.05)
    return True


def supervisors_of(pid: int | None, create_time: float | None, run_dir: Path, *,
                   scan: bool = True) -> tuple[list[ProcRef], Identity | None]:
    """The proven, live supervisors of ``run_dir``: the recorded one (``pid``, None for an
    intent record) when the OS proves it, else (with ``scan``) any found in the process
    table. Also what the OS said about the recorded pid (None when there is none)."""
    ident = None if pid is None else identify(pid, create_time, run_dir)
    if ident is not None and ident.ref is not None:
        return [ident.ref], ident
    return (find_supervisors(run_dir) if scan else []), ident
