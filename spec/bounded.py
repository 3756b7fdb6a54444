"""Read an input file without trusting it: at most ``limit + 1`` bytes, regular files only.

``stat()`` sizes lie for ``/dev/zero``, ``<(yes)`` and FIFOs (0 bytes, then endless data or
a reader blocked forever), so the check is made on the opened file and the read itself is
bounded. The file is opened non-blocking, so opening a FIFO cannot hang either.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

KINDS = ((stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class InputRefused(Exception):
    """The file cannot be read as an input; ``code`` is a diagnostic code suffix."""

    def __init__(self, message: str, code: str, size: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.size = size
        """For ``too-large``: the regular file's size, when known before reading."""


def read_bounded(path: Path, limit: int, what: str = "file", *, head: bool = False,
                 follow: bool = True) -> bytes:
    """The bytes of ``path``; raises :class:`InputRefused` for a non-regular file, a read
    error, or more than ``limit`` bytes (only ``limit + 1`` are ever read). With ``head``,
    the first ``limit`` bytes of a longer file instead of an error. Without ``follow``, a
    ``path`` that is itself a symbolic link is refused (``O_NOFOLLOW``): for files that
    another untrusted file named."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags if follow else flags | os.O_NOFOLLOW)
    except IsADirectoryError:
        raise InputRefused(f"is a directory, not a {what}", "io") from None
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP:
            raise InputRefused(f"is a symbolic link, not a {what}: not followed",
                               "not-a-file") from None
        raise InputRefused(f"cannot read {what}: {exc.strerror or exc}", "io") from None
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            raise InputRefused(f"is a directory, not a {what}", "io")
        for test, kind in KINDS:
            if test(mode):
                raise InputRefused(f"is {kind}, not a regular {what}; save it to a file first",
                                   "not-a-file")
        if info.st_size > limit and not head:
            raise InputRefused(f"{what} is {info.st_size:,} bytes, over the limit of "
                               f"{limit:,} bytes", "too-large", info.st_size)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputRefused(f"cannot read {what}: {exc.strerror or exc}", "io") from None
    finally:
        os.close(fd)
    if size > limit and head:
        return b"".join(chunks)[:limit]
    if size > limit:
        raise InputRefused(f"{what} is larger than the limit of {limit:,} bytes", "too-large")
    return b"".join(chunks)
