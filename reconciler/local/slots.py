"""At most ``sweep.max_parallel`` points of a local sweep train at once: slots that the points'
supervisors hold.

``apply`` returns as soon as every point's supervisor is started (``--wait`` only follows),
so the queue must outlive it: it lives in the supervisors themselves. Each point's
supervisor (``supervise.py``), before it starts the training command, takes one of the
sweep's N slot files, ``.ftspec/queue/<sweep-id>/slot-<k>``, with an exclusive ``flock`` and
holds it until the command has ended. The kernel drops a process's locks when it dies, so a
killed point frees its slot at once and no slot can be left taken by a process that is gone.

Points start in grid order: a point waits while any point before it in the grid is waiting
(a waiting point holds the lock on ``wait-<position>``), so a slot that frees goes to the
earliest waiting point. A waiting supervisor writes ``queued.json`` in its run folder
(``status``: Pending, "queued"); one stopped while it waits records an exit that says the
run never started, and one killed outright leaves a run folder with ``queued.json`` and no
``child.json``, which ``observe`` reads as "never started: stopped while queued".

Why our own: ``fcntl.flock`` is all it takes (the standard library's), and a queue service
would be one more process to keep alive on a laptop; the lock files are opened as every
state file is (``spec/safe_files.py``: no links followed).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ftspec.spec.safe_files import SafeDir

QUEUE_DIR = "queue"
"""Under ``.ftspec/``: one folder per sweep."""
ENV = "FTSPEC_SUPERVISOR_QUEUE"
"""How the backend hands a supervisor its queue (the training command never sees it)."""
QUEUED_FILE = "queued.json"
POLL_S = 0.2


@dataclass(frozen=True)
class Queue:
    """One point's place in its sweep's queue: the sweep's slot folder (absolute), how many
    slots it has, the point's position in grid order and the number of points."""

    folder: str
    slots: int
    position: int
    size: int

    def to_env(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def parse(cls, text: str | None) -> Queue | None:
        """None unless every field has its type and range (a malformed value starts the run
        at once rather than never)."""
        if not text:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        folder, slots, position, size = (data.get(k) for k in
                                         ("folder", "slots", "position", "size"))
        ints = (slots, position, size)
        if (not isinstance(folder, str) or not os.path.isabs(folder)
                or any(isinstance(v, bool) or not isinstance(v, int) for v in ints)):
            return None
        assert isinstance(slots, int) and isinstance(position, int) and isinstance(size, int)
        if not (1 <= slots <= 64 and 0 <= position < size <= 64):
            return None
        return cls(folder, slots, position, size)

    def as_json(self) -> dict[str, Any]:
        return {"max_parallel": self.slots, "position": self.position, "size": self.size}


class Slot:
    """A slot held: released by ``release`` or when the holding process ends."""

    def __init__(self, fd: int, index: int) -> None:
        self.fd = fd
        self.index = index

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing drops the flock
            self.fd = -1


def _lock(folder: SafeDir, name: str, how: int) -> int | None:
    """A descriptor of ``name`` locked with ``how`` (non-blocking); None when another process
    holds a conflicting lock."""
    fd = folder.open_fd(name, os.O_RDWR | os.O_CREAT, mode=0o600)
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def earlier_waiting(folder: SafeDir, position: int) -> bool:
    """Whether a point before ``position`` in grid order is waiting for a slot."""
    for j in range(position):
        if not folder.exists(f"wait-{j}"):
            continue
        fd = _lock(folder, f"wait-{j}", fcntl.LOCK_SH)
        if fd is None:
            return True
        os.close(fd)
    return False


def try_take(folder: SafeDir, queue: Queue) -> Slot | None:
    """A free slot, unless an earlier point waits for one (it goes first)."""
    if earlier_waiting(folder, queue.position):
        return None
    for k in range(queue.slots):
        fd = _lock(folder, f"slot-{k}", fcntl.LOCK_EX)
        if fd is not None:
            return Slot(fd, k)
    return None


def take(queue: Queue, on_wait: Callable[[], None], poll_s: float = POLL_S) -> Slot:
    """Wait for a slot of ``queue`` (``on_wait`` is called once, when the point has to wait);
    blocks until one is free and no earlier point waits."""
    with SafeDir.open(Path(queue.folder)) as folder:
        slot = try_take(folder, queue)
        if slot is not None:
            return slot
        waiting = _lock(folder, f"wait-{queue.position}", fcntl.LOCK_EX)
        on_wait()
        try:
            while True:
                time.sleep(poll_s)
                slot = try_take(folder, queue)
                if slot is not None:
                    return slot
        finally:
            if waiting is not None:
                os.close(waiting)
