"""The supervisor of one local run: ``python -m ftspec.reconciler.local.supervise RUN_DIR -- ARGV``.

It detaches (fork + setsid, so it belongs to no ftspec process and survives one being killed),
records itself in ``RUN_DIR/supervisor.json``, runs ARGV as its child in its own process group,
records the child in ``child.json`` and, when the child ends, its exit in ``exit.json``. A later
``ftspec status`` reads those files, so exit codes are known even when the ftspec process that
started the run died long before. stdout/stderr are inherited (the backend points them at the
run's log file). The process that launched it returns once ``supervisor.json`` exists.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

SUPERVISOR_FILE = "supervisor.json"
CHILD_FILE = "child.json"
EXIT_FILE = "exit.json"
STOP_FILE = "stop-requested"
_DETACH_TIMEOUT_S = 15.0


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic: readers see the old file or the whole new one, never half of it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object written by ``write_json``; None when absent or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _note(message: str) -> None:
    sys.stdout.write(f"[ftspec] {message}\n")
    sys.stdout.flush()


def _create_time(pid: int) -> float:
    import psutil

    return float(psutil.Process(pid).create_time())


def supervise(run_dir: Path, argv: list[str]) -> int:
    write_json(run_dir / SUPERVISOR_FILE, {
        "pid": os.getpid(), "create_time": _create_time(os.getpid()), "pgid": os.getpgid(0),
        "started_at": time.time(),
    })
    _note(f"run started (supervisor pid {os.getpid()}): {' '.join(argv)}")
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:
        _note(f"cannot start {argv[0]!r}: {exc}")
        write_json(run_dir / EXIT_FILE, {"returncode": 127, "signal": None,
                                         "ended_at": time.time(), "message": str(exc),
                                         "stop_requested": False})
        return 0

    def forward(signum: int, _frame: FrameType | None) -> None:
        try:
            os.kill(child.pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    write_json(run_dir / CHILD_FILE, {"pid": child.pid, "create_time": _create_time(child.pid)})
    code = child.wait()
    sig_name = signal.Signals(-code).name if code < 0 else None
    _note(f"run ended: {'killed by ' + sig_name if sig_name else 'exit code ' + str(code)}")
    write_json(run_dir / EXIT_FILE, {
        "returncode": code, "signal": sig_name, "ended_at": time.time(),
        "stop_requested": (run_dir / STOP_FILE).exists(),
        # the kernel's peak resident set of the largest waited-for descendant (KiB on Linux)
        "max_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    })
    return 0


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: python -m ftspec.reconciler.local.supervise RUN_DIR -- ARGV...\n")
        return 2
    run_dir, argv = Path(args[0]).resolve(), args[2:]
    (run_dir / SUPERVISOR_FILE).unlink(missing_ok=True)
    if os.fork() > 0:  # the launching process: return once the detached supervisor is recorded
        deadline = time.monotonic() + _DETACH_TIMEOUT_S
        while time.monotonic() < deadline:
            if (run_dir / SUPERVISOR_FILE).exists():
                return 0
            time.sleep(0.02)
        return 1
    os.setsid()
    try:
        code = supervise(run_dir, argv)
    finally:
        sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
