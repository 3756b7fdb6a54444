"""Process helpers for the test harness: free ports, PID-exact stopping, exit cleanup.

Everything here acts only on processes this Python process started (by PID, or by the
process group of a child started with ``start_new_session=True``). Nothing matches
processes by name.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import FrameType

_LOG_PREFIX = "[ftspec-harness]"


def log(message: str) -> None:
    """Progress message on stderr (pytest shows it with -s or on failure)."""
    stamp = time.strftime("%H:%M:%S")
    print(f"{_LOG_PREFIX} {stamp} {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- ports


def free_ports(count: int) -> list[int]:
    """Return ``count`` distinct loopback TCP ports that were free a moment ago.

    The sockets are held open until all ports are chosen, so the ports are distinct.
    A small race with other programs remains; callers retry on bind failures.
    """
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_is_listening(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


# --------------------------------------------------------------------------- /proc


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (field 3 onwards), or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw[raw.rfind(")") + 2 :].split()


def process_group_members(pgid: int) -> list[int]:
    """PIDs (not zombies) whose process group is ``pgid``."""
    members: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        # fields[0] = state, fields[2] = pgrp
        if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def descendants(pid: int) -> list[int]:
    """All live descendants of ``pid`` (children, grandchildren, ...)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def start_time(pid: int) -> int | None:
    """Kernel start time of ``pid`` (clock ticks since boot); identifies a process across PID reuse."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[19])


def rss_bytes(pids: Iterable[int]) -> int:
    """Sum of resident set sizes (VmRSS) of the given live processes."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def pss_bytes(pids: Iterable[int]) -> int:
    """Sum of proportional set sizes (shared pages split between sharers): the honest total."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


# --------------------------------------------------------------------------- stopping


def pdeathsig_prefix() -> list[str]:
    """Command prefix that makes a *single-process* child die with us, even on SIGKILL.

    ``setpriv --pdeathsig KILL`` sets PR_SET_PDEATHSIG and execs the command (same PID).
    Do not use it for process trees that must shut down gracefully (Ray).
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def stop_process(proc: subprocess.Popen[bytes], *, grace_s: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Send ``sig`` to the process we started, wait up to ``grace_s``, then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def is_alive(pid: int, started: int | None) -> bool:
    """True if ``pid`` is still the process that had start time ``started`` and is not a zombie."""
    fields = _stat_fields(pid)
    return started is not None and fields is not None and fields[0] != "Z" and int(fields[19]) == started


def stop_process_group(proc: subprocess.Popen[bytes], *, grace_s: float = 20.0, leader_first_s: float = 0.0) -> None:
    """Stop a child started with ``start_new_session=True`` and everything in its group.

    With ``leader_first_s`` > 0 only the leader gets SIGTERM first (for programs that shut down
    their own children) and up to that long to empty the group. Then SIGTERM goes to the whole
    group; after ``grace_s`` survivors get SIGKILL. Descendants that left the group are recorded
    before any signal (with their start times, so a reused PID is never hit) and are treated alike.
    """
    pgid = proc.pid
    tracked = {pid: start_time(pid) for pid in [*descendants(proc.pid), *process_group_members(pgid)]}

    def survivors() -> list[int]:
        alive = set(process_group_members(pgid))
        alive.update(pid for pid, started in tracked.items() if is_alive(pid, started))
        return sorted(alive)

    def signal_all(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        for pid, started in tracked.items():
            if is_alive(pid, started):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)

    def wait_until_gone(seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if proc.poll() is not None and not survivors():
                return True
            time.sleep(0.1)
        return False

    if leader_first_s > 0 and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        if wait_until_gone(leader_first_s):
            return
    signal_all(signal.SIGTERM)
    if wait_until_gone(grace_s):
        return
    log(f"process group {pgid} still has {survivors()} after {grace_s:.0f} s: SIGKILL")
    signal_all(signal.SIGKILL)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        log(f"process {proc.pid} did not exit after SIGKILL")
    wait_until_gone(10)


# --------------------------------------------------------------------------- exit cleanup

_cleanups: dict[int, Callable[[], None]] = {}
_cleanup_lock = threading.Lock()
_handlers_installed = False


def _run_cleanups() -> None:
    with _cleanup_lock:
        pending = list(_cleanups.items())
        _cleanups.clear()
    for _key, fn in reversed(pending):
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - one failed cleanup must not skip the rest
            log(f"cleanup failed: {exc!r}")


def _on_fatal_signal(signum: int, _frame: FrameType | None) -> None:
    _run_cleanups()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def register_cleanup(owner: object, fn: Callable[[], None]) -> None:
    """Run ``fn`` at interpreter exit or on SIGTERM/SIGHUP unless unregistered first."""
    global _handlers_installed
    with _cleanup_lock:
        _cleanups[id(owner)] = fn
        if _handlers_installed:
            return
        _handlers_installed = True
    atexit.register(_run_cleanups)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) == signal.SIG_DFL:
                signal.signal(signum, _on_fatal_signal)


def unregister_cleanup(owner: object) -> None:
    with _cleanup_lock:
        _cleanups.pop(id(owner), None)


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------- owned temp dirs

OWNER_FILE = ".ftspec-owner.json"


def make_owned_tempdir(prefix: str, base: str | None = None, *, detached: bool = False) -> Path:
    """``mkdtemp`` that records this process as owner, after sweeping stale dirs of ``prefix``.

    A dir is stale when its recorded owner process is gone (a test session that was SIGKILLed).
    Detached dirs (``kube.py start``) get no owner record and are never swept.
    """
    root = Path(base or tempfile.gettempdir())
    sweep_stale_tempdirs(prefix, root)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    if not detached:
        me = os.getpid()
        (path / OWNER_FILE).write_text(json.dumps({"pid": me, "start": start_time(me), "ns": _pid_namespace()}))
    return path


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return "unknown"


def record_group_leader(path: Path, pid: int) -> None:
    """Remember the process group we started in ``path`` so a later sweep can stop it."""
    owner_file = path / OWNER_FILE
    if owner_file.is_file():
        data = json.loads(owner_file.read_text())
        data["leader"] = {"pid": pid, "start": start_time(pid)}
        owner_file.write_text(json.dumps(data))


def sweep_stale_tempdirs(prefix: str, root: Path) -> None:
    for path in root.glob(f"{prefix}*"):
        try:
            data = json.loads((path / OWNER_FILE).read_text())
        except (FileNotFoundError, NotADirectoryError, ValueError):
            continue  # not ours, detached, or being created right now
        if data.get("ns") != _pid_namespace() or is_alive(int(data["pid"]), data.get("start")):
            continue  # owner alive, or PIDs recorded in another PID namespace: not comparable
        leader = data.get("leader")
        if leader is not None:
            pgid = int(leader["pid"])
            # A PID stays reserved while it is some process's group id, so members of this group
            # can only be the processes that the dead owner started.
            if is_alive(pgid, leader.get("start")) or process_group_members(pgid):
                log(f"stopping process group {pgid} left behind by dead test session {data['pid']}")
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)
        log(f"removing stale {path}")
        shutil.rmtree(path, ignore_errors=True)
