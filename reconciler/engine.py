"""What every backend's plan says alike, in one place: the one ``plan`` entry the CLI, the
apply flow and saved plans (``bound``) call.

The backend decides each change (it alone reads live state); this adds what depends only
on the desired state: a warning per job whose inputs' content the plan cannot compare
(``reconciler.inputs``: an unpinned hub revision, a ``pvc://`` claim, ``identity: path``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ftspec.reconciler.backend import Backend, Desired
from ftspec.reconciler.model import Plan


def plan(backend: Backend, desired: Sequence[Desired]) -> Plan:
    """``backend``'s plan of ``desired``, with the engine's warnings."""
    found = backend.plan(list(desired))
    extra = [w for w in dict.fromkeys(unchecked_warning(d) for d in desired) if w]
    return replace(found, warnings=(*found.warnings, *extra)) if extra else found


def unchecked_warning(d: Desired) -> str | None:
    """One line naming the inputs of ``d`` whose content a plan does not compare, and why."""
    parts = [f"{s.field} {s.uri} ({s.unchecked})" for s in d.inputs if s.unchecked]
    if not parts:
        return None
    return f"{d.job.spec_id}: content not checked for " + "; ".join(parts)
