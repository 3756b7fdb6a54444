"""The compile cache's folder and files, safe from other users of the machine.

Every folder from the cache folder up to the user's home (or ``/`` for a folder outside
it) must be this user's or root's and writable by nobody else; a folder with the sticky bit
(``/tmp``) may be writable by all, since there nobody can rename or remove what is not
theirs, as long as the folder below it is ours. Otherwise the cache is off for the process
and says so once (:func:`take_warning`, printed by the CLI). An entry is opened once,
without following a link, and checked on the open descriptor; one is written to a new
private file (``O_EXCL``) and renamed into place. Folders are created 0700.

Our own code rather than ``ftspec.spec`` helpers: these checks are the cache's (the
ancestors' ownership, the once-a-process warning), and a few system calls say them.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

MAX_ENTRIES = 2000
"""Past this many entries, the oldest half is removed when the next one is written."""

MAX_ENTRY_BYTES = 16 * 1024 * 1024
"""An entry larger than this is not read (a spec is at most 1 MiB)."""

_WARNING: str | None = None
_WARNED = False
_WARN_LOCK = threading.Lock()


def take_warning() -> str | None:
    """Why the cache was off in this process, the first time it is asked (then None): the
    CLI prints it once, however many specs found the cache off."""
    global _WARNING
    with _WARN_LOCK:
        warning, _WARNING = _WARNING, None
    return warning


def safe_folder(where: Path, create: bool) -> str | None:
    """The cache folder (its real path), if it and every folder above it up to the home
    folder (or ``/``) are safe from other users; None if not (or not there, unless
    ``create``: then the missing folders are made, 0700, below a safe one). Plain string
    paths: this runs for every entry read, and pathlib's objects cost more than the stats."""
    try:
        real = _real(str(where))
        existing = real
        while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
            existing = os.path.dirname(existing)
        why = _unsafe(existing, own=existing == real)
        if why is None and existing != real:
            if not create:
                return None
            missing = []
            probe = real
            while probe != existing:
                missing.append(probe)
                probe = os.path.dirname(probe)
            for each in reversed(missing):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(each, 0o700)
            why = _unsafe(real, own=True)
    except OSError:
        return None
    if why is None:
        return real
    global _WARNING, _WARNED
    with _WARN_LOCK:
        if not _WARNED:
            _WARNED = True
            _WARNING = (f"compile cache off: {why} (FTSPEC_CACHE_DIR names another folder; "
                        "FTSPEC_COMPILE_CACHE=off turns the cache off quietly)")
    return None


def _unsafe(real: str, own: bool) -> str | None:
    """What makes ``real`` (a folder, links resolved) or a folder above it up to the home
    folder (or ``/``) writable by another user, or None. ``own``: ``real`` is the cache
    folder itself, which must be this user's."""
    home = _real(os.path.expanduser("~"))
    stop = home if real == home or real.startswith(home.rstrip(os.sep) + os.sep) else os.sep
    me = os.geteuid()
    each = real
    while True:
        st = os.stat(each)
        if not stat.S_ISDIR(st.st_mode):
            return f"{each} is not a folder"
        if st.st_uid not in ((me,) if own else (me, 0)):
            return f"{each} belongs to another user"
        if st.st_mode & 0o022 and not (st.st_mode & stat.S_ISVTX and not own):
            return f"others may write to {each}"
        own = False
        parent = os.path.dirname(each)
        if each == stop or parent == each:
            return None
        each = parent


_REAL: dict[str, str] = {}


def _real(path: str) -> str:
    """``path`` with its links resolved, once a process for the folders this module uses
    (links in them can be changed only by whoever may write there, which is checked)."""
    real = _REAL.get(path)
    if real is None:
        real = _REAL[path] = os.path.realpath(path)
    return real


def read_private(path: str) -> bytes | None:
    """The content of ``path`` if it is a regular file of this user's that nobody else may
    read or write: opened once, without following a link, checked on the descriptor."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid()
                or st.st_mode & 0o077 or st.st_size > MAX_ENTRY_BYTES):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_json_entry(folder: Path | None, name: str) -> dict[str, Any] | None:
    """The JSON object kept as ``name`` in the cache folder ``folder`` (None: the cache is
    off); None when the folder is not safe, the entry is absent or not private
    (``read_private``), or it is not a JSON object."""
    where = None if folder is None else safe_folder(folder, create=False)
    raw = None if where is None else read_private(os.path.join(where, name))
    if raw is None:
        return None
    try:
        entry = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None


def write_new(where: str, name: str, data: bytes) -> None:
    """``data`` as ``where/name``: written to a new private file, then renamed over it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    tmp = Path(where) / f".tmp-{os.getpid()}-{os.urandom(6).hex()}"
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, os.path.join(where, name))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def prune(where: str, suffixes: tuple[str, ...]) -> None:
    """Past ``MAX_ENTRIES`` files ending so, the oldest half removed."""
    entries = [p for p in Path(where).iterdir() if p.name.endswith(suffixes)]
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda p: p.lstat().st_mtime_ns)
    for old in entries[: len(entries) // 2]:
        old.unlink(missing_ok=True)
