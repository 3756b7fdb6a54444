"""The one wait loop every backend's ``wait`` runs: poll, report, stop at the end or deadline.

A backend gives an ``observe`` function (what the job is doing now and the log lines added
since the last call) and a ``final`` one (the ``Status`` to return); the loop reports phase
changes and one progress event per new step, and returns once the phase is terminal or the
deadline has passed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ftspec.reconciler.backend import Reporter
from ftspec.reconciler.model import Phase, Status
from ftspec.reconciler.progress import Tracker, report

TERMINAL = (Phase.SUCCEEDED, Phase.FAILED)


@dataclass(frozen=True)
class Observed:
    """One look at a job: its phase, the log lines added since the last look, and a message
    that is reported each time it changes (None: phase changes are not reported)."""

    phase: Phase
    lines: list[str] = field(default_factory=list)
    message: str | None = None
    elapsed_s: float | None = None
    """Seconds since the run started, where the backend knows it (the progress line's
    elapsed time, and its time left where the log has no step times: ``pace.progress``)."""


def wait_until_done(observe: Callable[[], Observed], final: Callable[[], Status], *,
                    tracker: Tracker, reporter: Reporter, address: str,
                    timeout_s: float | None = None, poll_s: float = 1.0) -> Status:
    """Poll ``observe`` every ``poll_s`` until the phase is terminal or ``timeout_s`` has
    passed; then return ``final()``."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    last: tuple[Phase, str] | None = None
    while True:
        seen = observe()
        if seen.message is not None and (seen.phase, seen.message) != last:
            reporter.event(f"{seen.phase.value}: {seen.message}", phase=seen.phase.value,
                           address=address)
            last = (seen.phase, seen.message)
        report(tracker, seen.lines, reporter, address, seen.elapsed_s)
        if seen.phase in TERMINAL or (deadline is not None and time.monotonic() > deadline):
            return final()
        time.sleep(poll_s)
