"""Files ftspec writes and reads back, never through a planted link.

Every operation starts from a base folder the user chose (the project root, ``--out DIR``)
and walks one name at a time on directory descriptors (``dir_fd``) with ``O_NOFOLLOW``:
a symbolic link anywhere below the base is refused with ``UnsafePathError``, never
followed and never silently deleted. New files are written to an exclusively created
temporary file in the same folder, then renamed over the destination (readers see the old
file or the whole new one); its mode is set on the temporary file, never on the target.
Private folders are created 0700 and must belong to this user.

Why our own: the standard library opens paths by name (following every link on the way)
and has no "write atomically, never through a link" call; ``tempfile`` follows links in
the folder it is given; the packages that offered atomic writes (``atomicwrites``) are
unmaintained and work by path too. Linux/macOS only (``O_NOFOLLOW``, ``dir_fd``).

Inputs the user names (specs, overlays, kubeconfigs) are read through ``bounded.py``,
which follows the links the user chose; this module is for the files ftspec itself keeps.
This module sits in ``spec/`` because that package imports nothing of ours, so every
package (the reconciler, the CLI, the supervisor process) may import it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import final

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_LIMIT = 4 * 1024 * 1024
"""Default bound on a state file read back (a run record is a few KiB)."""


class UnsafePathError(OSError):
    """A link, or something that is not a plain file or folder, where ftspec writes."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(errno.ELOOP, problem, str(path))
        self.path = str(path)
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def _parts(rel: str | Path) -> list[str]:
    text = str(rel)
    if text in ("", "."):
        return []
    parts = text.split("/")
    if text.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise UnsafePathError(text, "not a plain relative path (absolute, empty or '..' "
                                    "component)")
    return parts


def _refuse_kind(path: Path, mode: int) -> UnsafePathError:
    if stat.S_ISLNK(mode):
        return UnsafePathError(path, "is a symbolic link; ftspec never writes or reads its "
                                     "files through a link (remove the link)")
    return UnsafePathError(path, "is not a plain file or folder (remove it)")


@final
class SafeDir:
    """An open folder reached without links; files in it are named relative to it."""

    def __init__(self, fd: int, path: Path, private: bool) -> None:
        self.fd = fd
        self.path = path
        self.private = private

    # -------------------------------------------------------------- opening

    @classmethod
    def open(cls, base: Path, rel: str | Path = "", *, create: bool = False,
             private: bool = True) -> SafeDir:
        """``base/rel`` (``base`` itself may be reached through links: the user named it).
        ``create`` makes missing folders (0700 when ``private``, else 0777 less the umask);
        ``private`` folders must be owned by this user and are narrowed to 0700."""
        if create:
            base.mkdir(parents=True, exist_ok=True)
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        here = cls(fd, base, private=False)
        try:
            for name in _parts(rel):
                nxt = here._subdir(name, create, private)
                here.close()
                here = nxt
        except BaseException:
            here.close()
            raise
        if private and rel:
            here._make_private()
        here.private = private
        return here

    def _subdir(self, name: str, create: bool, private: bool) -> SafeDir:
        path = self.path / name
        if create:
            try:
                os.mkdir(name, 0o700 if private else 0o777, dir_fd=self.fd)
            except FileExistsError:
                pass
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise _refuse_kind(path, os.lstat(name, dir_fd=self.fd).st_mode) from None
            raise
        sub = SafeDir(fd, path, private)
        if private:
            sub._make_private()
        return sub

    def _make_private(self) -> None:
        st = os.fstat(self.fd)
        if st.st_uid != os.geteuid():
            raise UnsafePathError(self.path, f"belongs to another user (uid {st.st_uid}); "
                                             "ftspec keeps its state in folders of its own")
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.fchmod(self.fd, 0o700)

    def sub(self, rel: str | Path, *, create: bool = False) -> SafeDir:
        """A folder below this one (same privacy), reached without links."""
        here = SafeDir(os.dup(self.fd), self.path, self.private)
        try:
            for name in _parts(rel):
                nxt = here._subdir(name, create, self.private)
                here.close()
                here = nxt
        except BaseException:
            here.close()
            raise
        return here

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> SafeDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _parent(self, rel: str | Path, create: bool) -> Iterator[tuple[SafeDir, str]]:
        parts = _parts(rel)
        if not parts:
            raise UnsafePathError(rel, "names no file")
        if len(parts) == 1:
            yield self, parts[0]
            return
        with self.sub("/".join(parts[:-1]), create=create) as parent:
            yield parent, parts[-1]

    # -------------------------------------------------------------- files

    def _check_target(self, name: str) -> None:
        """Refuse a link or a special file where a plain file is to be written."""
        try:
            st = os.lstat(name, dir_fd=self.fd)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):
            raise _refuse_kind(self.path / name, st.st_mode)

    def write(self, rel: str | Path, data: bytes | str, *, mode: int = 0o600,
              create_dirs: bool = False) -> None:
        """Replace ``rel`` atomically with ``data`` (temporary file + rename)."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        with self._parent(rel, create_dirs) as (parent, name):
            parent._check_target(name)
            tmp = parent._new_temp(name, mode)
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent.fd)
                try:
                    view = memoryview(raw)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fchmod(fd, mode)
                finally:
                    os.close(fd)
                os.replace(tmp, name, src_dir_fd=parent.fd, dst_dir_fd=parent.fd)
            except BaseException:
                _unlink_quietly(tmp, parent.fd)
                raise

    def _new_temp(self, name: str, mode: int) -> str:
        for n in range(1000):
            tmp = f".{name}.{os.getpid()}.{n}.tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, mode & 0o700 | 0o600, dir_fd=self.fd)
            except FileExistsError:
                continue
            os.close(fd)
            return tmp
        raise FileExistsError(errno.EEXIST, "no free temporary file name", str(self.path))

    def create_new(self, rel: str | Path, data: bytes | str, *, mode: int = 0o600) -> None:
        """Create ``rel`` only if nothing (not even a link) is there (``O_EXCL``)."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        with self._parent(rel, False) as (parent, name):
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, mode, dir_fd=parent.fd)
            try:
                os.write(fd, raw)
            finally:
                os.close(fd)

    def open_fd(self, rel: str | Path, flags: int, *, mode: int = 0o600) -> int:
        """A descriptor of the plain file ``rel`` (``flags`` e.g. O_RDWR | O_CREAT or
        O_WRONLY | O_APPEND | O_CREAT), opened without following a link and refused when it
        is not a plain file (a FIFO would block, a device would be written)."""
        with self._parent(rel, False) as (parent, name):
            try:
                fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode,
                             dir_fd=parent.fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO):
                    raise _refuse_kind(parent.path / name,
                                       os.lstat(name, dir_fd=parent.fd).st_mode) from None
                raise
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                raise _refuse_kind(parent.path / name, st.st_mode)
            os.set_blocking(fd, True)
            return fd

    def read(self, rel: str | Path, limit: int = READ_LIMIT) -> bytes | None:
        """The bytes of the plain file ``rel``; None when it does not exist. A link or a
        file over ``limit`` bytes is refused (``UnsafePathError`` / ``OSError``)."""
        try:
            fd = self.open_fd(rel, os.O_RDONLY)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(self.path / rel))
        return data

    def unlink(self, rel: str | Path) -> None:
        """Remove the plain file ``rel`` if present; a link or special file there is
        refused (``UnsafePathError``), not removed silently."""
        with self._parent(rel, False) as (parent, name):
            parent._check_target(name)
            _unlink_quietly(name, parent.fd)

    def rename(self, src: str, dst: str) -> None:
        """Move the plain file ``src`` to ``dst`` in this folder (refused for links)."""
        self._check_target(src)
        self._check_target(dst)
        os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def exists(self, rel: str | Path) -> bool:
        try:
            with self._parent(rel, False) as (parent, name):
                os.lstat(name, dir_fd=parent.fd)
        except OSError:
            return False
        return True


def _unlink_quietly(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
