"""A field a launcher does not honour: one row of its contract table (``targets.contract``,
filled from each launcher's ``gaps()``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ftspec.spec.diagnostics import KeyPath, Severity
from ftspec.spec.ir import Job

ERROR, WARNING = Severity.ERROR, Severity.WARNING


@dataclass(frozen=True)
class Gap:
    path: KeyPath
    severity: Severity
    reason: str
    hint: str | None = None
    when: Callable[[Job], bool] | None = None
    """Only when this holds (default: whenever the field is off its default)."""
