"""What every backend's plan and apply do alike, in one place: the one ``plan`` entry the
CLI, the apply flow and saved plans (``bound``) call, and the one ``apply``.

The backend decides each change (it alone reads live state); this adds what depends only
on the desired state and the user's request: each change's ML lines, what differs in ML
terms between the run applied and the one desired (``ml_lines``, from the summaries the
backend read: ``Planned.summaries``), a warning per job whose inputs' content the
plan cannot compare (``reconciler.inputs``: an unpinned hub revision, a ``pvc://`` claim,
``identity: path``), a note for each run kept although some fields differ (a change the
backend found cannot alter what it trained: logging cadence), and the runs the user asked to run again although nothing changed
(``--replace ADDRESS``, as Terraform's ``-replace``: the no-op becomes a replace).

``apply`` is the one apply entry: ``check_fresh``, the one staleness check, compares what
the backend reads now (``Backend.read_digests``: a digest per address, as its plan digested
it) with what the plan read, with the backend's locks held, before the backend acts; and
says what changed in the backend's words (``StaleWords``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ftspec.reconciler.backend import (
    Backend,
    BackendError,
    Desired,
    Reporter,
    StalePlanError,
    StaleWords,
)
from ftspec.reconciler.model import Action, ApplyResult, Change, Plan, Planned

REPLACE_REASON = ("replace requested (--replace): the run is done again with the same spec "
                  "and inputs")


def plan(backend: Backend, desired: Sequence[Desired], replacing: Sequence[str] = ()) -> Plan:
    """``backend``'s plan of ``desired``, with the engine's warnings; each address of
    ``replacing`` replaced even where nothing changed (``BackendError`` for an address the
    plan does not hold)."""
    found = backend.plan(list(desired))
    found = replace(found, changes=tuple(ml_lines(c) for c in found.changes))
    if replacing:
        found = replace(found, changes=forced(found.changes, replacing))
    extra = unchecked_warnings(desired)
    extra += [f"{c.address}: not run again: {c.reason}" for c in found.changes
              if c.action is Action.NOOP and c.fields and c.reason]
    return replace(found, warnings=(*found.warnings, *extra)) if extra else found


def ml_lines(change: Change) -> Change:
    """``change`` as a plain ``Change`` with its ML lines: where the backend handed its
    ``Summaries`` (``Planned``), each quantity of the run in ML terms that differs between
    the run applied and the one desired (``learning rate 0.0002 -> 0.0001``), before the
    backend's own lines (what changed in the inputs' content). Any other change is as it is."""
    if not isinstance(change, Planned):
        return change
    if change.summaries is None:
        return change.plain(change.ml_changes)
    from ftspec.compiler.summary import describe_changes

    said = describe_changes(change.summaries.applied, change.summaries.desired)
    return change.plain((*said, *change.ml_changes))


def forced(changes: Sequence[Change], replacing: Sequence[str]) -> tuple[Change, ...]:
    """``changes`` with the no-op of each address in ``replacing`` made a replace (a change
    that already creates or replaces it stays as it is)."""
    known = {c.address for c in changes if c.action is not Action.DELETE}
    unknown = [a for a in replacing if a not in known]
    if unknown:
        listed = ", ".join(sorted(known)) or "none"
        raise BackendError(f"--replace {unknown[0]}: these specs plan no run of that address",
                           hint=f"the addresses of this plan: {listed}")
    wanted = set(replacing)
    return tuple(
        replace(c, action=Action.REPLACE, drift=False, reason="; ".join(
            r for r in (REPLACE_REASON, c.reason if c.action is Action.UPDATE else None) if r))
        if c.address in wanted and c.action in (Action.NOOP, Action.UPDATE) else c
        for c in changes)


def unchecked_warnings(desired: Sequence[Desired]) -> list[str]:
    """One line per set of inputs whose content a plan does not compare, and why, naming
    the jobs that read them (a sweep's points share one line)."""
    jobs: dict[str, list[str]] = {}
    for d in desired:
        parts = [f"{s.field} {s.uri} ({s.unchecked})" for s in d.inputs if s.unchecked]
        if parts:
            jobs.setdefault("; ".join(parts), []).append(d.job.spec_id)
    return [f"{', '.join(ids)}: content not checked for {what}" for what, ids in jobs.items()]


def stale_reads(planned: Mapping[str, str], now: Mapping[str, str]
                ) -> list[tuple[str, str, str]]:
    """(address, digest planned, digest now) of each address both read that differs."""
    return [(a, was, now[a]) for a, was in planned.items() if a in now and now[a] != was]


def check_fresh(plan: Plan, now: Mapping[str, str], words: StaleWords, note: str = ""
                ) -> None:
    """Refuse (``StalePlanError``) ``plan`` when what it read differs from what is read
    ``now`` (the first address that differs, then ``note``); nothing has been changed."""
    stale = stale_reads(plan.read_digests, now)
    if stale:
        raise StalePlanError(f"Saved plan is stale: {words.said(*stale[0])}{note}",
                             hint=words.hint)


def apply(backend: Backend, plan: Plan, reporter: Reporter) -> ApplyResult:
    """Apply exactly ``plan``, for every backend: with what the backend holds for it held
    (``holding``: the local state lock, a Kubernetes spec's leases), the plan is refused
    (``StalePlanError``, nothing changed) unless what the backend reads now is what the plan
    read, then the backend makes the changes (``act``). A saved plan has been bound to its
    specs before (``bound.bind``)."""
    with backend.holding(plan, reporter) as note:
        check_fresh(plan, backend.read_digests(plan), backend.stale_words, note)
        return backend.act(plan, reporter)
