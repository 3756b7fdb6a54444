"""`ftspec logs` of a job with one log (local, Ray): the one policy of printing, tailing and
following it. A backend supplies only how its log is read (``LogReader``: a file,
``logread.LogFollower``; an API returning the whole log, ``logread.TextLog``) and whether
its job has ended."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Protocol

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.logread import tail_lines


class LogReader(Protocol):
    def read_new(self, final: bool = False) -> list[str]:
        """The lines written since the last read; an unterminated last line waits for the
        next read unless ``final``."""
        ...

    def read_end(self, final: bool = False) -> str:
        """The end of the log as text (its tail: bounded where the log can be large); the
        next read starts after it."""
        ...


def refuse_selector(selector: str | None, job: str) -> None:
    """A selector picks pods of a Kubernetes job; ``job`` (its kind, "a Ray job") has one
    log."""
    if selector:
        raise BackendError(f"--selector picks pods of a Kubernetes job; {job} has one log",
                           hint="leave --selector out")


def one_log(log: LogReader, ended: Callable[[], bool], *, follow: bool, tail: int | None,
            pause_s: float, sleep: Callable[[float], None] = time.sleep) -> Iterator[str]:
    """The lines of ``log`` (the last ``tail`` as a terminal shows them: progress-bar
    redraws folded), then with ``follow`` the lines it gains until ``ended()``, read
    every ``pause_s``."""
    if tail is None:
        yield from log.read_new(final=not follow)
    else:
        yield from tail_lines(log.read_end(final=not follow), tail)
    while follow:
        lines = log.read_new()
        yield from lines
        if not lines and ended():
            # the end was seen after a read that brought nothing: one more read has it all
            yield from log.read_new(final=True)
            return
        sleep(pause_s)
