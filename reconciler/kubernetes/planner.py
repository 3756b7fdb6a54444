"""Pure decisions: one desired object + what the server said -> one ``Change``.

Inputs are plain dicts read by a backend (live object, dry-run result); nothing here does
I/O, so every decision is unit-testable with hand-written objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ftspec.reconciler.applied import RECORD_KEY, AppliedRecord, decode, legacy_summary
from ftspec.reconciler.backend import Desired
from ftspec.reconciler.fielddiff import field_changes
from ftspec.reconciler.kubernetes.comparable import comparable
from ftspec.reconciler.kubernetes.drift import drift_managers, recorded_digest
from ftspec.reconciler.kubernetes.essence import applied_digest, essence
from ftspec.reconciler.kubernetes.immutable import forcing_pattern, gated, suspend_gate
from ftspec.reconciler.model import Action, Change, Planned, Reads, Summaries, Upgrading
from ftspec.spec.ir import SPEC_HASH_ANNOTATION
from ftspec.spec.ownership import SPEC_ID_LABEL, SWEEP_LABEL, owned_spec_id


class OwnershipError(Exception):
    """The object exists but belongs to someone else: ftspec will not touch it."""


def address(target: str, obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or "_"
    return f"{target}.{obj.get('kind')}.{ns}/{meta.get('name')}"


def owner_of(obj: dict[str, Any]) -> str | None:
    """The spec-id owning ``obj``, or None when ftspec does not manage it."""
    return owned_spec_id((obj.get("metadata") or {}).get("labels"))


def sweep_of(obj: dict[str, Any]) -> str | None:
    """The identity of the sweep whose point ``obj`` is (ftspec's objects only), or None."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    value = labels.get(SWEEP_LABEL) if owner_of(obj) else None
    return value if isinstance(value, str) else None


def _record_text(obj: dict[str, Any] | None) -> Any:
    """The applied record annotation an object carries, as it is (None: none)."""
    annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    return annotations.get(RECORD_KEY) if isinstance(annotations, dict) else None


def records(live: dict[str, Any], desired: dict[str, Any]
            ) -> tuple[AppliedRecord | None, AppliedRecord | None]:
    """The applied records of the live and the desired object (``ftspec.reconciler.applied``),
    each decoded once: the same text (an object unchanged since applied) once for both, as
    decoding inflates the defaults it holds."""
    live_text, desired_text = _record_text(live), _record_text(desired)
    live_record = decode(live_text)
    return live_record, live_record if desired_text == live_text else decode(desired_text)


def ml_of(obj: dict[str, Any], record: AppliedRecord | None) -> dict[str, str] | None:
    """The ML summary of ``obj``: from its applied record ``record``, or where an older
    ftspec kept it."""
    from ftspec.compiler.summary import SUMMARY_ANNOTATION

    if record is not None:
        return record.summary or None
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(SUMMARY_ANNOTATION)
    return legacy_summary(raw) or None


@dataclass(frozen=True)
class ObjectInput:
    target: str
    spec_id: str
    spec_file: str
    desired: dict[str, Any]
    live: dict[str, Any] | None
    dry_run: dict[str, Any] | None = None
    """The server's dry-run result of applying ``desired`` (defaults filled in)."""
    trainer_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    adopt_from: str | None = None
    """A spec id the live object may carry instead of ``spec_id``: the same job under an
    earlier identity (``reconciler.identity``); ``moved`` says why."""
    moved: str | None = None


def _relabelled(obj: dict[str, Any], spec_id: str) -> dict[str, Any]:
    meta = dict(obj.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), SPEC_ID_LABEL: spec_id}
    return {**obj, "metadata": meta}


def decide(inp: ObjectInput) -> Change:
    addr = address(inp.target, inp.desired)
    if inp.live is None:
        return Change(addr, Action.CREATE, None, inp.desired, spec_file=inp.spec_file)
    owner = owner_of(inp.live)
    adopted = owner is not None and owner != inp.spec_id and owner == inp.adopt_from
    moves: dict[str, Any] = {"moved_from": addr, "moved": inp.moved} if adopted else {}
    if owner != inp.spec_id and not adopted:
        who = f"spec {owner!r}" if owner else "something other than ftspec"
        raise OwnershipError(
            f"{addr} already exists and is managed by {who}; ftspec will not take it over "
            f"(rename metadata.name, or delete that object yourself)"
        )
    kind = str(inp.desired.get("kind"))
    before = essence(_relabelled(inp.live, inp.spec_id) if adopted else inp.live)
    after = essence(inp.dry_run if inp.dry_run is not None else inp.desired)
    live_run, desired_run = comparable(before), comparable(after)

    forcing: list[str] = []
    gate = suspend_gate(kind, inp.trainer_version, inp.live, after)

    def forces(path: str) -> bool:
        patterns = [forcing_pattern(kind, path, inp.trainer_version),
                    gate if gated(gate, path) else None]
        forcing.extend(p for p in dict.fromkeys(patterns) if p and p not in forcing)
        return any(patterns)

    fields = field_changes(live_run, desired_run, forces)
    if not fields:
        return Change(addr, Action.NOOP, before, inp.desired, spec_file=inp.spec_file, **moves)
    changed = [f.path for f in fields]
    managers = drift_managers(inp.live, changed)
    drift = bool(managers) or recorded_digest(inp.live) == applied_digest(inp.desired)
    reasons = []
    if forcing:
        reasons.append(", ".join(forcing) + (" forces" if len(forcing) == 1 else " force")
                       + " replacement")
    if gate in forcing:
        reasons.append(f"the Trainer refuses any change to {gate} while the TrainJob is "
                       "not suspended (deploy.kubeflow.suspend)")
    if drift:
        by = f" by {', '.join(managers)}" if managers else ""
        reasons.append(f"drift: changed outside ftspec{by}")
    action = Action.REPLACE if forcing else Action.UPDATE
    return Change(addr, action, before, inp.desired, reason="; ".join(reasons) or None,
                  fields=tuple(fields), drift=drift, spec_file=inp.spec_file, **moves)


def planned(change: Change, inp: ObjectInput) -> Change:
    """``change`` (``decide``'s, on what would run only) for the engine
    (``engine.settled``), where the object is applied: with the inputs the applied record
    and the desired one name (a replace where their content changed), the summaries of
    both (the ML lines of an update or replace) and, for a change of what would run that is
    not drift, what its upgrade note reads."""
    if inp.live is None:
        return change
    live_record, new_record = records(inp.live, inp.desired)
    reads = Reads(live_record.inputs if live_record else None,
                  tuple(new_record.inputs.values()) if new_record else ())
    applied, desired = ml_of(inp.live, live_record), ml_of(inp.desired, new_record)
    summaries = Summaries(applied, desired) if applied and desired else None
    upgrading = None
    if change.action is not Action.NOOP and not change.drift and new_record is not None:
        live_notes = (inp.live.get("metadata") or {}).get("annotations") or {}
        upgrading = Upgrading(live_record, new_record, legacy=SPEC_HASH_ANNOTATION in live_notes)
    return Planned.of(change, summaries, reads, upgrading)


def orphan(target: str, live: dict[str, Any], spec_file: str | None) -> Change:
    spec_id = owner_of(live)
    return Change(address(target, live), Action.DELETE, essence(live), None,
                  reason=f"no longer produced by spec {spec_id!r} (renamed or removed)",
                  spec_file=spec_file)


def left_sweep(target: str, live: dict[str, Any], spec_file: str | None) -> Change:
    """A delete of ``live``, an object of the spec whose current jobs do not include it:
    a point no longer in ``sweep.grid`` (or the spec's job from before it had a sweep)."""
    return Change(address(target, live), Action.DELETE, essence(live), None,
                  reason=f"{owner_of(live)!r} is not a point of the spec's sweep.grid now",
                  spec_file=spec_file)


def destroy(target: str, live: dict[str, Any], spec_file: str | None) -> Change:
    return Change(address(target, live), Action.DELETE, essence(live), None,
                  reason="destroy requested", spec_file=spec_file)


def spec_strays(desired: Sequence[Desired], owned: dict[str, list[dict[str, Any]]]
                ) -> list[tuple[Desired, dict[str, Any]]]:
    """ftspec's objects of the desired specs that no desired job is: points that left a
    sweep's grid (their sweep label names the spec's identity, ``SWEEP_LABEL``), a point of
    a spec whose sweep was removed, and the job of a spec from before it had a sweep. Each
    with the Desired of its spec; objects of any other spec are never included."""
    jobs = {f"{d.job.namespace}/{d.job.spec_id}" for d in desired}
    specs: dict[str, Desired] = {}
    for d in desired:
        specs.setdefault(f"{d.job.namespace}/{d.job.labels.get(SWEEP_LABEL, d.job.spec_id)}", d)
    found = []
    for key, items in sorted(owned.items()):
        if key in jobs:
            continue
        ns = key.split("/", 1)[0]
        for live in items:
            base = sweep_of(live)
            spec = specs.get(key) or (specs.get(f"{ns}/{base}") if base else None)
            if spec is not None:
                found.append((spec, live))
    return found
