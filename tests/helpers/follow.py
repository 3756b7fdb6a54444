"""`ftspec logs --follow` watched from outside: when each line arrived, relative to the job's
end as the backend itself reports it (the tests' own observer, polled on a thread)."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Followed:
    lines: list[tuple[float, str]] = field(default_factory=list)
    """(when it arrived, the line)."""
    ended_at: float | None = None
    """When the observer first saw the job ended."""
    exited_at: float | None = None
    returncode: int | None = None

    def before_end(self, contains: str) -> list[str]:
        return [line for at, line in self.lines if contains in line
                and (self.ended_at is None or at < self.ended_at)]


def follow(argv: list[str], cwd: Path, env: dict[str, str], ended: Callable[[], bool],
           timeout: float = 600) -> Followed:
    """Run ``argv`` (``ftspec logs SPEC --follow``) until it exits; ``ended`` says whether
    the job has ended (polled every 0.5 s while the command runs)."""
    out = Followed()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    done = threading.Event()

    failed: list[BaseException] = []

    def watch() -> None:
        try:
            while not done.is_set() and out.ended_at is None:
                if ended():
                    out.ended_at = time.monotonic()
                time.sleep(0.5)
        except BaseException as exc:  # noqa: BLE001 - raised in the test's thread below
            failed.append(exc)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.lines.append((time.monotonic(), line.rstrip("\n")))
        out.returncode = proc.wait()
        out.exited_at = time.monotonic()
    finally:
        killer.cancel()
        done.set()
        watcher.join()
    if failed:
        raise failed[0]
    if out.ended_at is None and ended():
        out.ended_at = out.exited_at
    return out
