"""What every backend's plan says alike, in one place: the one ``plan`` entry the CLI, the
apply flow and saved plans (``bound``) call.

The backend decides each change (it alone reads live state); this adds what depends only
on the desired state and the user's request: a warning per job whose inputs' content the
plan cannot compare (``reconciler.inputs``: an unpinned hub revision, a ``pvc://`` claim,
``identity: path``), a note for each run kept although some fields differ (a change the
backend found cannot alter what it trained: logging cadence), and the runs the user asked to run again although nothing changed
(``--replace ADDRESS``, as Terraform's ``-replace``: the no-op becomes a replace).

At apply, ``check_fresh`` is the one staleness check: what the backend reads now
(``backend.DigestReader``: a digest per address, as its plan digested it) against what the
plan read, and the one way of saying what changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ftspec.reconciler.backend import ABSENT, Backend, BackendError, Desired, StalePlanError
from ftspec.reconciler.model import Action, Change, Plan

REPLACE_REASON = ("replace requested (--replace): the run is done again with the same spec "
                  "and inputs")


def plan(backend: Backend, desired: Sequence[Desired], replacing: Sequence[str] = ()) -> Plan:
    """``backend``'s plan of ``desired``, with the engine's warnings; each address of
    ``replacing`` replaced even where nothing changed (``BackendError`` for an address the
    plan does not hold)."""
    found = backend.plan(list(desired))
    if replacing:
        found = replace(found, changes=forced(found.changes, replacing))
    extra = unchecked_warnings(desired)
    extra += [f"{c.address}: not run again: {c.reason}" for c in found.changes
              if c.action is Action.NOOP and c.fields and c.reason]
    return replace(found, warnings=(*found.warnings, *extra)) if extra else found


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


@dataclass(frozen=True)
class StaleWords:
    """How a backend names what its plan read at ``address`` and how it changed, in
    "Saved plan is stale: {subject} {how} since the plan was made"."""

    subject: str
    """With ``{address}``: "the run of {address}"."""
    created: str = "was created"
    removed: str = "was removed"
    changed: str = "was changed"
    versions: bool = False
    """Whether the digests are worth showing ("(planned rv:12, now rv:15)")."""
    hint: str = "run `ftspec plan` again"

    def how(self, was: str, now: str) -> str:
        return self.created if was == ABSENT else self.removed if now == ABSENT else \
            self.changed

    def said(self, address: str, was: str, now: str) -> str:
        """What changed at ``address``, after "Saved plan is stale: "."""
        versions = f" (planned {was}, now {now})" if self.versions else ""
        return (f"{self.subject.format(address=address)} {self.how(was, now)} since the plan "
                f"was made{versions}")


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
