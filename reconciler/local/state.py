"""Local state, like Terraform's local backend: ``.ftspec/`` in the project root
(``reconciler.project``: the working directory, or the nearest folder above it with one).

    .ftspec/state.lock            fcntl lock held by apply / destroy (holder pid written inside)
    .ftspec/local/<spec-id>.json  one ``RunRecord`` per spec that has a run (``record.py``)
    <run_dir>/                    launch files, train.log, supervisor.json, child.json, exit.json

Every file here is reached through ``ftspec.spec.safe_files`` (no planted link is followed;
folders 0700, records 0600, written atomically: a killed ftspec never leaves half a file).
A record that fails its checks, a link where a state file should be, or a write that fails
(a full disk) is a ``BackendError`` naming the file or folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.local.record import RecordError, RunRecord, load_record
from ftspec.reconciler.project import STATE_DIR
from ftspec.spec.safe_files import SafeDir, UnsafePathError

RECORDS = "local"
LOCK_FILE = "state.lock"
_SUFFIX = ".json"


def disk_error(where: Path | str, exc: OSError, action: str = "write") -> BackendError:
    """One line for a failed read or write of local state: what and where, no traceback."""
    if isinstance(exc, UnsafePathError):
        return BackendError(f"local state: {exc}",
                            hint="ftspec refuses links and special files where it keeps its "
                            "state; remove it (it was not created by ftspec)")
    reason = exc.strerror or type(exc).__name__
    return BackendError(f"cannot {action} the local state under {where}: {reason}",
                        hint="free some space or fix the folder's permissions, then retry",
                        retryable=True)


@contextmanager
def guarded(where: Path | str, action: str = "write") -> Iterator[None]:
    """OSError raised inside -> a ``BackendError`` naming ``where``."""
    try:
        yield
    except OSError as exc:
        raise disk_error(where, exc, action) from None


def open_run_dir(root: Path, run_dir: str, *, create: bool = False) -> SafeDir | None:
    """A run folder (``RunRecord.run_dir``), reached without links; None when it is gone.
    Raises OSError (``UnsafePathError`` for a link on the way)."""
    try:
        return SafeDir.open(root, run_dir, create=create)
    except FileNotFoundError:
        return None


class StateStore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.dir = self.root / STATE_DIR
        self.records_dir = self.dir / RECORDS

    def _path(self, spec_id: str) -> Path:
        return self.records_dir / f"{spec_id}{_SUFFIX}"

    def state_dir(self, rel: str = "", *, create: bool = False) -> SafeDir:
        """``.ftspec/rel`` opened without links (0700; raises OSError)."""
        return SafeDir.open(self.root, f"{STATE_DIR}/{rel}".rstrip("/"), create=create)

    def _raw(self, spec_id: str) -> bytes | None:
        with guarded(self.records_dir, "read"):
            try:
                folder = self.state_dir(RECORDS)
            except FileNotFoundError:
                return None
            with folder:
                return folder.read(f"{spec_id}{_SUFFIX}")

    def read(self, spec_id: str) -> RunRecord | None:
        raw = self._raw(spec_id)
        if raw is None:
            return None
        try:
            return load_record(raw, spec_id)
        except RecordError as exc:
            raise BackendError(
                f"{self._path(spec_id)}: invalid run record: {exc}",
                hint="the file was changed outside ftspec; nothing was signalled. If no run "
                "of this spec is active, delete the file; otherwise restore it") from None

    def digest(self, spec_id: str) -> str:
        """What a saved plan remembers of this record (``absent`` when there is none)."""
        raw = self._raw(spec_id)
        return "absent" if raw is None else hashlib.sha256(raw).hexdigest()[:16]

    def write(self, record: RunRecord) -> None:
        import json

        text = json.dumps(record.to_json(), indent=2, sort_keys=True, allow_nan=False) + "\n"
        with guarded(self.records_dir), self.state_dir(RECORDS, create=True) as folder:
            folder.write(f"{record.spec_id}{_SUFFIX}", text, mode=0o600)

    def remove(self, spec_id: str) -> None:
        with guarded(self.records_dir):
            try:
                folder = self.state_dir(RECORDS)
            except FileNotFoundError:
                return
            with folder:
                folder.unlink(f"{spec_id}{_SUFFIX}")

    def spec_ids(self) -> list[str]:
        with guarded(self.records_dir, "read"):
            try:
                folder = self.state_dir(RECORDS)
            except FileNotFoundError:
                return []
            with folder:
                names = os.listdir(folder.fd)
        return sorted(n[: -len(_SUFFIX)] for n in names
                      if n.endswith(_SUFFIX) and not n.startswith("."))

    def all(self) -> list[RunRecord]:
        out = []
        for spec_id in self.spec_ids():
            record = self.read(spec_id)
            if record is not None:
                out.append(record)
        return out

    @contextmanager
    def lock(self, timeout_s: float = 30.0, on_wait: Callable[[str], None] | None = None
             ) -> Iterator[str | None]:
        """Exclusive lock on the local state. A second apply waits (``on_wait`` is told whom
        for), then fails clearly naming the holder; yields the holder it waited for (None
        when the lock was free), so a plan made before can say who changed the state."""
        from ftspec.reconciler.local.lockinfo import holder_record, read_holder

        path = self.dir / LOCK_FILE
        waited_for: str | None = None
        with guarded(self.dir), self.state_dir(create=True) as folder:
            fd = folder.open_fd(LOCK_FILE, os.O_RDWR | os.O_CREAT, mode=0o600)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    holder = read_holder(fd)
                    if waited_for is None and on_wait is not None:
                        on_wait(holder)
                    waited_for = holder
                    if time.monotonic() >= deadline:
                        raise BackendError(
                            f"another ftspec apply/destroy holds the lock on the local state "
                            f"{self.dir}: {holder}",
                            hint="wait for it to finish (the lock is released when its "
                            "process ends), then run this command again",
                            retryable=True,
                        ) from None
                    time.sleep(0.1)
            with guarded(path):
                os.ftruncate(fd, 0)
                os.pwrite(fd, holder_record(), 0)
            yield waited_for
        finally:
            os.close(fd)  # closing releases the flock
