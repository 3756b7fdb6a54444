"""What every backend's plan and apply do alike, in one place: the one ``plan`` entry the
CLI, the apply flow and saved plans (``bound``) call, and the one ``apply``.

The backend decides each change on what would run (it alone reads live state) and hands
what it read of the applied run (``model.Planned``); this settles each change
(``settled``): a replace where the content of what the run read changed since it was
applied (the one caller of ``inputs.changed``), what differs in ML terms between the run
applied and the one desired (the one caller of ``compiler.summary.describe_changes``), and
the upgrade note (the one caller of ``applied.upgrade_note``). It adds what depends only
on the desired state and the user's request: a warning per job whose inputs' content the
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
from typing import TYPE_CHECKING

from ftspec.reconciler.backend import (
    Backend,
    BackendError,
    Desired,
    Reporter,
    StalePlanError,
    StaleWords,
)
from ftspec.reconciler.model import Action, ApplyResult, Change, Plan, Planned

if TYPE_CHECKING:
    from ftspec.reconciler.inputs import InputChange

REPLACE_REASON = ("replace requested (--replace): the run is done again with the same spec "
                  "and inputs")


def plan(backend: Backend, desired: Sequence[Desired], replacing: Sequence[str] = ()) -> Plan:
    """``backend``'s plan of ``desired``, with the engine's warnings; each address of
    ``replacing`` replaced even where nothing changed (``BackendError`` for an address the
    plan does not hold)."""
    found = backend.plan(list(desired))
    found = replace(found, changes=tuple(settled(c) for c in found.changes))
    if replacing:
        found = replace(found, changes=forced(found.changes, replacing))
    extra = unchecked_warnings(desired)
    extra += [f"{c.address}: not run again: {c.reason}" for c in found.changes
              if c.action is Action.NOOP and c.fields and c.reason]
    return replace(found, warnings=(*found.warnings, *extra)) if extra else found


def settled(change: Change) -> Change:
    """``change`` as a plan shows and saves it, a plain ``Change``. A ``Planned`` change (a
    backend's, decided on what would run only) becomes a replace where the content its run
    read changed since it was applied (``reads``: ``inputs.changed``; ``replaced``); then,
    where it updates or replaces the run, it says what differs in ML terms (``summaries``:
    ``compiler.summary.describe_changes``) before its own lines (what changed in the inputs'
    content), and why what would run differs although the spec does not (``upgrading``:
    ``applied.upgrade_note``). Any other change is as it is."""
    if not isinstance(change, Planned):
        return change
    if change.reads is not None:
        from ftspec.reconciler import inputs

        read = inputs.changed(change.reads.applied, change.reads.desired)
        if read:
            change = replaced(change, read)
    if change.action not in (Action.UPDATE, Action.REPLACE):
        return change.plain(change.ml_changes)
    said: tuple[str, ...] = ()
    if change.summaries is not None:
        from ftspec.compiler.summary import describe_changes

        said = tuple(describe_changes(change.summaries.applied, change.summaries.desired))
    upgrade = None
    if change.upgrading is not None:
        from ftspec.reconciler.applied import upgrade_note

        how = change.upgrading
        upgrade = upgrade_note(how.record, how.now, legacy=how.legacy)
    return change.plain((*said, *change.ml_changes), upgrade)


def replaced(change: Planned, read: tuple[InputChange, ...]) -> Planned:
    """``change`` made the replace of a run whose inputs' content changed (``read``): the
    backend's replace of the run (``Planned.replacing``) whose reason follows what would
    run changed or else the inputs' reason, or (none handed) ``change`` itself made a
    replace with the inputs' reason after its own; each with the changed inputs' field rows
    and lines after its own."""
    from ftspec.reconciler import inputs

    rows, lines = inputs.as_fields(read), tuple(c.line() for c in read)
    how = change.replacing() if change.replacing is not None else None
    if how is None:
        base, why = change, "; ".join(r for r in (change.reason, inputs.reason(read)) if r)
    else:
        base, why = how.change, (how.why or inputs.reason(read)) + (how.change.reason or "")
    return replace(base, action=Action.REPLACE, reason=why, fields=(*base.fields, *rows),
                   ml_changes=(*base.ml_changes, *lines))


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
