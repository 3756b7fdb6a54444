"""`apply --wait` for a sweep's points: one live table on a terminal, named lines otherwise.

A sweep's points run side by side (up to ``sweep.max_parallel``) while the plain follow
reads one run's log after another, so on a terminal the points are followed together: a
table with a row per point (name, phase, step, loss, time left), redrawn about once a second
from each point's status, the same ``Status.metrics`` (``pace`` progress model) that
``ftspec list`` and ``status`` print. When the output is no terminal (a pipe, CI) the lines
stay, each named by its point (``named``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from ftspec.reconciler.backend import Desired
from ftspec.reconciler.model import Phase, Status
from ftspec.reconciler.pace import left_text, step_text

COLUMNS = ("NAME", "PHASE", "STEP", "LOSS", "LEFT")
TERMINAL = (Phase.SUCCEEDED, Phase.FAILED)


def sweep_points(desired: Sequence[Desired]) -> bool:
    """Whether ``desired`` holds more than one point of a sweep."""
    return sum(1 for d in desired if d.sweep is not None) > 1


class Named:
    """A reporter that names the point on each of its lines (``NAME: step 3/16 …``), so the
    piped lines of a sweep's points can be told apart."""

    def __init__(self, inner: Any, name: str) -> None:
        self._inner = inner
        self._name = name

    def event(self, message: str, **data: Any) -> None:
        address = str(data.get("address") or "")
        if not (address and message.startswith(f"{address}:")):
            message = f"{self._name}: {message}"
        self._inner.event(message, **data)

    def close(self) -> None:
        self._inner.close()


def phase_text(status: Status) -> str:
    """``Pending (queued)`` for a point waiting for a slot, else the phase."""
    if status.phase is Phase.PENDING and status.platform.get("queued") \
            and not status.platform.get("run_started_at"):
        return "Pending (queued)"
    return str(status.phase.value)


def row_cells(name: str, status: Status) -> list[str]:
    """One point's row: NAME, PHASE, STEP, LOSS, LEFT (the ``list`` cells' words)."""
    metrics = status.metrics
    loss = metrics.get("loss", metrics.get("final_loss"))
    loss_text = "-" if not isinstance(loss, (int, float)) or not math.isfinite(loss) \
        else f"{loss:.4f}"
    left = "-" if status.phase in TERMINAL else left_text(metrics)
    return [name, phase_text(status), step_text(metrics) or "-", loss_text, left]


def table_text(names: Sequence[str], statuses: Sequence[Status]) -> str:
    """The table (rich markup), aligned as ``list`` aligns its rows."""
    from ftspec.cli.render_list import table_lines

    cells = [row_cells(n, s) for n, s in zip(names, statuses, strict=True)]
    return "\n".join(table_lines(list(COLUMNS), cells, [s.phase.value for s in statuses], 1))


def follow_table(names: Sequence[str], look: Callable[[], list[Status]], out: Any, *,
                 timeout_s: float | None, poll_s: float = 1.0,
                 sleep: Callable[[float], None] | None = None,
                 clock: Callable[[], float] | None = None) -> list[Status]:
    """Redraw the table on ``out`` (a rich console) from ``look()`` (the points' statuses,
    in ``names`` order) every ``poll_s`` until every point has ended or ``timeout_s`` has
    passed; the last statuses. The final table stays on screen."""
    from rich.live import Live
    from rich.text import Text

    sleep = sleep or time.sleep
    clock = clock or time.monotonic
    deadline = None if timeout_s is None else clock() + timeout_s
    with Live(console=out, auto_refresh=False, transient=False) as live:
        while True:
            statuses = look()
            live.update(Text.from_markup(table_text(names, statuses)), refresh=True)
            if all(s.phase in TERMINAL for s in statuses) or \
                    (deadline is not None and clock() > deadline):
                return statuses
            sleep(poll_s)
