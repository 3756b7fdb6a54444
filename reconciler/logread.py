"""Reading a job's log as it grows: a file's tail, what was appended since the last read
(a file here, or a whole log an API returns each time: Ray's Jobs API, pod logs)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
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
    """Reads what was appended to a log file since the last call (for live progress)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._partial = ""

    def read_new(self, final: bool = False) -> list[str]:
        """The lines appended since the last read; an unterminated last line waits for the
        next read unless ``final`` (the run has ended)."""
        return split_lines(self._take(final))

    def read_end(self, final: bool = False, max_bytes: int = _TAIL_READ_BYTES) -> str:
        """The end of the log (at most ``max_bytes``, from a line start) as text; the next
        read starts after it."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return ""
        start = max(0, size - max_bytes)
        self.offset, self._partial = start, ""
        text = self._take(final)
        if start and "\n" in text:  # the first line began before the read
            text = text[text.index("\n") + 1:]
        return text

    def _take(self, final: bool) -> str:
        try:
            with open_log(self.path) as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            data = b""
        self.offset += len(data)
        text = self._partial + data.decode("utf-8", errors="replace")
        cut = _line_end(text, final)
        self._partial = text[cut:]
        return text[:cut]


class LogFollowerText:
    """The same as ``LogFollower`` for APIs that return the whole log each time (Ray's Jobs
    API, pod logs): the lines added since the last call; an unterminated last line waits."""

    def __init__(self) -> None:
        self.offset = 0

    def new_lines(self, text: str, final: bool = False) -> list[str]:
        return split_lines(self.take(text, final))

    def take(self, text: str, final: bool = False) -> str:
        """What ``text`` (the whole log) holds past the last call, as text."""
        if len(text) < self.offset:  # the log was rotated or restarted
            self.offset = 0
        cut = _line_end(text, final)
        if cut <= self.offset:
            return ""
        chunk, self.offset = text[self.offset:cut], cut
        return chunk


class TextLog:
    """A log an API returns whole at each read (Ray's Jobs API) read as ``LogFollower``
    reads a file: ``fetch`` returns the log so far."""

    def __init__(self, fetch: Callable[[], str]) -> None:
        self.fetch = fetch
        self.seen = LogFollowerText()

    def read_new(self, final: bool = False) -> list[str]:
        return self.seen.new_lines(self.fetch(), final)

    def read_end(self, final: bool = False) -> str:
        return self.seen.take(self.fetch(), final)


def _line_end(text: str, final: bool) -> int:
    """Where the complete lines of ``text`` end: all of it once ``final``, else after its
    last line break."""
    return len(text) if final else max(text.rfind("\n"), text.rfind("\r")) + 1
