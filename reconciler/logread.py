"""Reading a job's log as it grows: a file's tail, what was appended since the last read
(a file here, or a whole log an API returns each time: Ray's Jobs API, pod logs)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from ftspec.reconciler.progress import clean_lines, split_lines

_TAIL_READ_BYTES = 256 * 1024


def open_log(path: Path) -> BinaryIO:
    """A log file for reading, never through a link and never a FIFO or device (a link
    planted where a run writes its log must not print another file)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a plain file")
    return os.fdopen(fd, "rb")


def read_tail(path: Path, max_bytes: int = _TAIL_READ_BYTES) -> str:
    """The end of a log file (text), or '' when it does not exist."""
    try:
        with open_log(path) as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def tail_lines(text: str, n: int) -> list[str]:
    return clean_lines(text)[-n:] if n > 0 else []


class LogFollower:
    """Reads what was appended to a log since the last call (for live progress)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._partial = ""

    def read_new(self) -> list[str]:
        try:
            with open_log(self.path) as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        self.offset += len(data)
        text = self._partial + data.decode("utf-8", errors="replace")
        # keep an unterminated last line for the next call
        cut = max(text.rfind("\n"), text.rfind("\r"))
        self._partial = text[cut + 1:]
        return split_lines(text[:cut + 1])


class LogFollowerText:
    """The same as ``LogFollower`` for APIs that return the whole log each time (Ray's Jobs
    API, pod logs): the lines added since the last call; an unterminated last line waits."""

    def __init__(self) -> None:
        self.offset = 0

    def new_lines(self, text: str, final: bool = False) -> list[str]:
        if len(text) < self.offset:  # the log was rotated or restarted
            self.offset = 0
        cut = len(text) if final else max(text.rfind("\n"), text.rfind("\r")) + 1
        if cut <= self.offset:
            return []
        chunk, self.offset = text[self.offset:cut], cut
        return split_lines(chunk)
