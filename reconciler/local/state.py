"""Local state, like Terraform's local backend: ``.ftspec/`` in the working directory.

    .ftspec/state.lock            fcntl lock held by apply / destroy (holder pid written inside)
    .ftspec/local/<spec-id>.json  one ``RunRecord`` per spec that has a run
    <run_dir>/                    launch files, train.log, supervisor.json, child.json, exit.json

Records are written atomically (write + rename), so a killed ftspec never leaves half a file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.local.supervise import write_json

STATE_DIR = ".ftspec"
RECORD_VERSION = 1


@dataclass(frozen=True)
class RunRecord:
    """What ftspec started for one spec. Live facts (alive? exit code?) are read separately."""

    spec_id: str
    spec_hash: str
    spec_file: str
    launcher: str
    argv: list[str]
    env: dict[str, str]
    """Only what ftspec added to the inherited environment (never the whole environment)."""
    cwd: str
    run_dir: str
    log: str
    started_at: float
    supervisor_pid: int
    supervisor_create_time: float
    pgid: int
    summary: dict[str, str] = field(default_factory=dict)
    version: int = RECORD_VERSION
    applied: str = ""
    """``ftspec.reconciler.applied`` record (version, spec as written, defaults, summary);
    empty in records of an older ftspec."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


class StateStore:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.dir = self.root / STATE_DIR
        self.records_dir = self.dir / "local"

    def _path(self, spec_id: str) -> Path:
        return self.records_dir / f"{spec_id}.json"

    def read(self, spec_id: str) -> RunRecord | None:
        try:
            data = json.loads(self._path(spec_id).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            raise BackendError(
                f"local state {self._path(spec_id)} is unreadable: {exc}",
                hint="inspect or delete that file; the run it described may still be active",
            ) from exc
        return RunRecord.from_json(data)

    def digest(self, spec_id: str) -> str:
        """What a saved plan remembers of this record (``absent`` when there is none)."""
        try:
            return hashlib.sha256(self._path(spec_id).read_bytes()).hexdigest()[:16]
        except FileNotFoundError:
            return "absent"

    def write(self, record: RunRecord) -> None:
        self.records_dir.mkdir(parents=True, exist_ok=True)
        write_json(self._path(record.spec_id), record.to_json())

    def remove(self, spec_id: str) -> None:
        self._path(spec_id).unlink(missing_ok=True)

    def all(self) -> list[RunRecord]:
        if not self.records_dir.is_dir():
            return []
        out = []
        for path in sorted(self.records_dir.glob("*.json")):
            record = self.read(path.stem)
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

        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / "state.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        waited_for: str | None = None
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
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder_record(), 0)
            yield waited_for
        finally:
            os.close(fd)  # closing releases the flock
