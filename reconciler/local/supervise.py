"""The supervisor of one local run: ``python -m ftspec.reconciler.local.supervise RUN_DIR -- ARGV``.

It detaches (fork + setsid, so it belongs to no ftspec process and survives one being killed),
records itself in ``RUN_DIR/supervisor.json``, waits for a slot of its sweep's queue when
the backend gave it one (``slots.py``: ``sweep.max_parallel``; meanwhile ``queued.json``
says so), runs ARGV as its child in its own process group,
records the child in ``child.json`` and, when the child ends, its exit in ``exit.json``
(after ``usage.json``: the child's process tree's CPU, memory and GPU use over the run,
sampled once a second by ``sampler.py``). A later
``ftspec status`` reads those files, so exit codes are known even when the ftspec process that
started the run died long before. stdout/stderr are inherited (the backend points them at the
run's log file). The process that launched it returns once ``supervisor.json`` exists.
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from ftspec.reconciler.local.sampler import Sampler
from ftspec.reconciler.local.slots import ENV as QUEUE_ENV
from ftspec.reconciler.local.slots import QUEUED_FILE, Queue, Slot, take
from ftspec.spec.safe_files import SafeDir

SUPERVISOR_FILE = "supervisor.json"
CHILD_FILE = "child.json"
EXIT_FILE = "exit.json"
USAGE_FILE = "usage.json"
STOP_FILE = "stop-requested"
_DETACH_TIMEOUT_S = 15.0
_CONTROL_READ_LIMIT = 64 * 1024


def write_json(folder: SafeDir, name: str, data: dict[str, Any]) -> None:
    """Atomic (readers see the old file or the whole new one), private, never through a
    link (``safe_files``)."""
    folder.write(name, json.dumps(data, indent=2, sort_keys=True) + "\n", mode=0o600)


def read_json(folder: SafeDir, name: str) -> dict[str, Any] | None:
    """A JSON object written by ``write_json``; None when absent, unreadable, a link, or
    not an object (NaN and Infinity are refused)."""
    try:
        raw = folder.read(name, _CONTROL_READ_LIMIT)
        data = None if raw is None else json.loads(raw.decode("utf-8"),
                                                   parse_constant=_no_constant)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _number(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class SupervisorInfo:
    """``supervisor.json``: the supervisor as it recorded itself."""

    pid: int
    create_time: float
    pgid: int
    started_at: float

    @classmethod
    def parse(cls, data: dict[str, Any] | None) -> SupervisorInfo | None:
        """None unless every field has its type (a finite time, an int pid)."""
        if data is None:
            return None
        pid, pgid = data.get("pid"), data.get("pgid")
        created, started = _number(data, "create_time"), _number(data, "started_at")
        if (isinstance(pid, bool) or not isinstance(pid, int) or pid != pgid
                or created is None or started is None):
            return None
        return cls(pid, created, pid, started)


@dataclass(frozen=True)
class ExitInfo:
    """``exit.json``: how the training command ended."""

    returncode: int
    signal: str | None
    ended_at: float | None
    stop_requested: bool
    message: str | None = None

    @classmethod
    def parse(cls, data: dict[str, Any] | None) -> ExitInfo | None:
        """None when absent or malformed (a wrong type is no exit code)."""
        if data is None:
            return None
        code, sig, msg = data.get("returncode"), data.get("signal"), data.get("message")
        if isinstance(code, bool) or not isinstance(code, int) or not -256 < code < 256:
            return None
        return cls(code, sig if isinstance(sig, str) else None, _number(data, "ended_at"),
                   data.get("stop_requested") is True, msg if isinstance(msg, str) else None)


def _note(message: str) -> None:
    sys.stdout.write(f"[ftspec] {message}\n")
    sys.stdout.flush()


def _create_time(pid: int) -> float:
    import psutil

    return float(psutil.Process(pid).create_time())


class _Stopped(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _stop_waiting(signum: int, _frame: FrameType | None) -> None:
    """Stop waiting, once: ``stop`` signals the process group and then the supervisor
    itself, so a second SIGTERM follows the first at once; raised again while the exit is
    written, it would end the supervisor with nothing written (read as "killed")."""
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise _Stopped(signum)


def _queued(run_dir: SafeDir, queue: Queue) -> Slot | None:
    """A slot of the sweep's queue (None: stopped while waiting; its exit is written)."""
    handlers = {sig: signal.signal(sig, _stop_waiting) for sig in _STOP_SIGNALS}

    def waiting() -> None:
        write_json(run_dir, QUEUED_FILE, {**queue.as_json(), "since": time.time()})
        _note(f"queued: point {queue.position + 1} of {queue.size} waits for one of "
              f"{queue.slots} slots (sweep.max_parallel)")

    try:
        slot = take(queue, waiting)
    except _Stopped as stop:
        name = signal.Signals(stop.signum).name
        _note(f"stopped by {name} while queued: the run never started")
        write_json(run_dir, EXIT_FILE, {
            "returncode": -stop.signum, "signal": name, "ended_at": time.time(),
            "stop_requested": run_dir.exists(STOP_FILE),
            "message": f"never started: stopped by {name} while queued for a slot"})
        return None
    except OSError as exc:  # the run goes on unqueued rather than never
        _note(f"the sweep's queue cannot be read ({exc}); starting without a slot")
        slot = Slot(-1, -1)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if run_dir.exists(QUEUED_FILE):
        _note(f"slot {slot.index + 1} of {queue.slots} taken: starting")
    return slot


def supervise(run_dir: SafeDir, argv: list[str], queue: Queue | None = None) -> int:
    write_json(run_dir, SUPERVISOR_FILE, {
        "pid": os.getpid(), "create_time": _create_time(os.getpid()), "pgid": os.getpgid(0),
        "started_at": time.time(),
    })
    slot = None
    if queue is not None:
        slot = _queued(run_dir, queue)
        if slot is None:
            return 0
    try:
        return _run(run_dir, argv)
    finally:
        if slot is not None:
            slot.release()


def _run(run_dir: SafeDir, argv: list[str]) -> int:
    _note(f"run started (supervisor pid {os.getpid()}): {' '.join(argv)}")
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:
        _note(f"cannot start {argv[0]!r}: {exc}")
        write_json(run_dir, EXIT_FILE, {"returncode": 127, "signal": None,
                                         "ended_at": time.time(), "message": str(exc),
                                         "stop_requested": False})
        return 0

    def forward(signum: int, _frame: FrameType | None) -> None:
        try:
            os.kill(child.pid, signum)
        except ProcessLookupError:
            pass

    for sig in _STOP_SIGNALS:
        signal.signal(sig, forward)
    write_json(run_dir, CHILD_FILE, {"pid": child.pid, "create_time": _create_time(child.pid),
                                     "started_at": time.time()})
    sampler = _start_sampler(child.pid)
    code = child.wait()
    if sampler is not None:
        _write_usage(run_dir, sampler)
    sig_name = signal.Signals(-code).name if code < 0 else None
    _note(f"run ended: {'killed by ' + sig_name if sig_name else 'exit code ' + str(code)}")
    write_json(run_dir, EXIT_FILE, {
        "returncode": code, "signal": sig_name, "ended_at": time.time(),
        "stop_requested": run_dir.exists(STOP_FILE),
        # the kernel's peak resident set of the largest waited-for descendant (KiB on Linux)
        "max_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    })
    return 0


def _start_sampler(pid: int) -> Sampler | None:
    """The child's resource sampler; None (no figures) rather than a supervisor that
    fails to wait for its child."""
    try:
        return Sampler(pid).start()
    except Exception as exc:  # noqa: BLE001 - the run goes on unsampled
        _note(f"resource use not sampled: {type(exc).__name__}: {exc}")
        return None


def _write_usage(run_dir: SafeDir, sampler: Sampler) -> None:
    """The sampler's summary; a failure here loses the figures, never the exit record."""
    try:
        write_json(run_dir, USAGE_FILE, sampler.stop())
    except Exception as exc:  # noqa: BLE001 - exit.json must still be written
        _note(f"resource use not recorded: {type(exc).__name__}: {exc}")


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: python -m ftspec.reconciler.local.supervise RUN_DIR -- ARGV...\n")
        return 2
    # the run folder was made (without links) by the backend, which names it here
    run_dir, argv = SafeDir.open(Path(args[0])), args[2:]
    queue = Queue.parse(os.environ.pop(QUEUE_ENV, None))  # the training command never sees it
    run_dir.unlink(SUPERVISOR_FILE)
    if os.fork() > 0:  # the launching process: return once the detached supervisor is recorded
        deadline = time.monotonic() + _DETACH_TIMEOUT_S
        while time.monotonic() < deadline:
            if run_dir.exists(SUPERVISOR_FILE):
                return 0
            time.sleep(0.02)
        return 1
    os.setsid()
    try:
        code = supervise(run_dir, argv, queue)
    finally:
        sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
