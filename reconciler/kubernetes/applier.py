"""Apply exactly a plan: preflight and the specs' leases (``holding``, in which
``engine.apply`` checks the plan is fresh), then the changes in order (``act``).

Whatever plan it is given, the applier touches only what ftspec manages (``_guard``): the
kinds ``MANAGED_KINDS`` lists for the change's deploy target, at the address the object
itself has, objects it writes carrying ftspec's ownership labels; and it deletes (for a
delete or a replace) only a live object that carries ftspec's ownership labels for the
change's spec, read just before, with that object's uid as the delete's precondition
(``_owned_live``). Saved plans are bound to their specs before they get here
(``reconciler.bound``); these checks hold for every plan all the same.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from ftspec.reconciler.backend import BackendError, Reporter, StalePlanError
from ftspec.reconciler.kubernetes.children import wait_children_gone
from ftspec.reconciler.kubernetes.drift import FIELD_MANAGER
from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.essence import with_applied_digest
from ftspec.reconciler.kubernetes.lease import SpecLease
from ftspec.reconciler.kubernetes.planner import address, owner_of
from ftspec.reconciler.kubernetes.preflight import preflight
from ftspec.reconciler.kubernetes.resources import (
    MANAGED_KINDS,
    describe,
    object_path,
    runtime_needed,
)
from ftspec.reconciler.kubernetes.transport import APPLY_PATCH, MERGE_PATCH, Transport
from ftspec.reconciler.model import Action, ApplyResult, Change, Plan
from ftspec.reconciler.pace import duration
from ftspec.spec.loader import SourceDoc
from ftspec.spec.ownership import SPEC_ID_LABEL

ORDER = {Action.DELETE: 0, Action.REPLACE: 1, Action.CREATE: 2, Action.UPDATE: 2,
         Action.NOOP: 3}
NEEDED_FIRST = ("ConfigMap", "TrainingRuntime", "ClusterTrainingRuntime")
"""Kinds other objects of a plan need to exist (a TrainJob its runtime and its files):
applied before the rest."""
DELETE_TIMEOUT_S = 300.0
CACHE_WAIT_S = 30.0
"""How long apply retries an object an admission webhook refuses because the object it
needs, which this apply just created, is not yet in the controller's cache."""


def _order(change: Change) -> tuple[int, int]:
    """Deletes first, then what other objects need, then the rest (each by ``ORDER``)."""
    if change.action is Action.DELETE:
        return (0, 0)
    needed = str(_obj(change).get("kind")) in NEEDED_FIRST
    return (1 if needed else 2, ORDER[change.action])


def _obj(change: Change) -> dict[str, Any]:
    return change.after or change.before or {}


def _apply_one(t: Transport, obj: dict[str, Any], force: bool) -> dict[str, Any]:
    query = {"fieldManager": FIELD_MANAGER}
    if force:
        query["force"] = "true"
    body = json.dumps(with_applied_digest(obj)).encode()
    return t.request("PATCH", object_path(obj), body, content_type=APPLY_PATCH, query=query,
                     verb="apply", what=describe(obj)) or {}


def _apply_after_needed(t: Transport, obj: dict[str, Any], force: bool, reporter: Reporter,
                        addr: str, needed: str) -> dict[str, Any]:
    """``_apply_one``, retried for up to ``CACHE_WAIT_S`` while an admission webhook refuses
    it: ``needed`` (its runtime) was created by this apply and the controller's cache may not
    have it yet (the Trainer's webhook reads runtimes from its informer). The last refusal
    is raised if it persists."""
    start = time.monotonic()
    delay = 0.25
    while True:
        try:
            return _apply_one(t, obj, force)
        except ApiError as exc:
            elapsed = time.monotonic() - start
            if exc.webhook is None or elapsed + delay > CACHE_WAIT_S:
                if exc.webhook is not None:
                    exc.hint = (f"{needed} was created by this apply and the webhook still "
                                f"refused {addr} after {elapsed:.0f} s; " + (exc.hint or ""))
                raise
            reporter.event(f"{addr}: waiting for the controller to see {needed} "
                           f"(admission webhook {exc.webhook} refused it) "
                           f"[{duration(elapsed)} elapsed]", address=addr, waiting=True,
                           elapsed=round(elapsed, 1))
            time.sleep(delay)
            delay = min(delay * 2, 4.0)


def _relabel(t: Transport, obj: dict[str, Any]) -> None:
    """Only the object's own spec-id label (its template's copies may be immutable and
    are not compared: ``comparable``)."""
    label = ((obj.get("metadata") or {}).get("labels") or {}).get(SPEC_ID_LABEL)
    t.request("PATCH", object_path(obj), {"metadata": {"labels": {SPEC_ID_LABEL: label}}},
              content_type=MERGE_PATCH, query={"fieldManager": FIELD_MANAGER}, verb="patch",
              what=describe(obj))


def _guard(change: Change) -> None:
    """Refuse (``BackendError``) a change of anything ftspec does not manage."""
    obj = _obj(change)
    target = change.address.split(".", 1)[0]
    kind = obj.get("kind")
    if kind not in MANAGED_KINDS.get(target, ()):
        raise BackendError(f"{change.address}: ftspec does not manage {kind!r} objects for "
                           f"deploy.target {target!r}; nothing was changed")
    if address(target, obj) != change.address:
        raise BackendError(f"{change.address}: the object is {describe(obj)}, not the one "
                           "the address names; nothing was changed")
    if change.after is not None and owner_of(change.after) is None:
        raise BackendError(f"{change.address}: the object to write does not carry ftspec's "
                           "ownership labels; nothing was changed")


def _owned_live(t: Transport, change: Change) -> dict[str, Any] | None:
    """The live object a delete or replace removes, read now, or None when it is gone;
    ``BackendError`` unless it carries ftspec's ownership labels for the change's spec
    (a moved object: for any spec, as the plan adopts it from an earlier identity)."""
    obj = _obj(change)
    live = t.request("GET", object_path(obj), verb="get", what=describe(obj), ok_404=True)
    if live is None:
        return None
    owner = owner_of(live)
    expected = owner_of(change.before or {}) or owner_of(change.after or {})
    if owner is None or expected is None or (owner != expected and not change.moved_from):
        labels = (live.get("metadata") or {}).get("labels") or {}
        raise BackendError(f"refusing to delete {describe(obj)}: it does not carry ftspec's "
                           f"ownership labels for spec {expected!r} (its labels: {labels}); "
                           "nothing was deleted", hint="ftspec deletes only objects it "
                           "created for the spec; delete this one yourself if you mean to")
    return live


def _delete(t: Transport, change: Change, rv: str | None) -> bool:
    """Delete the live object of ``change`` if it is ftspec's for the change's spec; False
    when it was already gone."""
    obj = _obj(change)
    live = _owned_live(t, change)
    if live is None:
        return False
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions",
                            "propagationPolicy": "Background"}
    conditions = {"uid": (live.get("metadata") or {}).get("uid")}
    if rv and rv.startswith("rv:"):
        conditions["resourceVersion"] = rv[3:]
    body["preconditions"] = {k: v for k, v in conditions.items() if v}
    try:
        t.request("DELETE", object_path(obj), body, verb="delete", what=describe(obj),
                  ok_404=True)
    except ApiError as exc:
        if exc.status == 409:
            raise StalePlanError(f"{describe(obj)} changed since the plan was made; not deleted",
                                 hint="run plan again") from None
        raise
    return True


def _wait_gone(t: Transport, obj: dict[str, Any], reporter: Reporter, addr: str) -> None:
    start = time.monotonic()
    while True:
        live = t.request("GET", object_path(obj), verb="get", what=describe(obj), ok_404=True)
        elapsed = time.monotonic() - start
        if live is None:
            reporter.event(f"{addr}: deleted", address=addr, elapsed=round(elapsed, 1))
            return
        if elapsed > DELETE_TIMEOUT_S:
            finalizers = (live.get("metadata") or {}).get("finalizers") or []
            raise BackendError(f"{describe(obj)} is still being deleted after "
                               f"{DELETE_TIMEOUT_S:.0f} s (finalizers: {finalizers or 'none'})",
                               hint="check the controller that owns these finalizers; run apply "
                               "again once it is gone", retryable=True)
        reporter.event(f"{addr}: waiting for deletion... [{duration(elapsed)} elapsed]",
                       address=addr, elapsed=round(elapsed, 1), waiting=True)
        time.sleep(0.25 if elapsed < 5 else 1.0)


def _execute(t: Transport, plan: Plan, change: Change, reporter: Reporter, force: bool,
             applied: set[str] | None = None) -> None:
    """``applied``: ``Kind name`` of the objects this apply created or changed so far."""
    obj = _obj(change)
    rv = plan.read_digests.get(change.address)
    if change.action is Action.DELETE:
        reporter.event(f"{change.address}: destroying...", address=change.address)
        if _delete(t, change, rv):
            _wait_gone(t, obj, reporter, change.address)
        return
    assert change.after is not None
    if change.action is Action.NOOP:  # a move: the same object, labelled with its new id
        _relabel(t, change.after)
        reporter.event(f"{change.address}: {change.moved} (labelled again; nothing else "
                       "changed)", address=change.address)
        return
    if change.action is Action.REPLACE:
        reporter.event(f"{change.address}: destroying (replace)...", address=change.address)
        if _delete(t, change, rv):
            _wait_gone(t, obj, reporter, change.address)
    if change.action in (Action.CREATE, Action.REPLACE):  # the new job must not inherit
        wait_children_gone(t, obj, reporter, change.address)
    verb = "modifying" if change.action is Action.UPDATE else "creating"
    reporter.event(f"{change.address}: {verb}...", address=change.address)
    runtime = runtime_needed(change.after)
    needed = " ".join(runtime) if runtime else None
    if needed and needed in (applied or set()):
        _apply_after_needed(t, change.after, force, reporter, change.address, needed)
    else:
        _apply_one(t, change.after, force)
    reporter.event(f"{change.address}: {change.action.value} complete",
                   address=change.address, action=change.action.value)


def _leases(t: Transport, changes: list[Change]) -> list[SpecLease]:
    keys = set()
    for change in changes:
        obj = _obj(change)
        ns = (obj.get("metadata") or {}).get("namespace")
        spec_id = owner_of(obj)
        if ns and spec_id:
            keys.add((ns, spec_id))
    return [SpecLease(t, ns, spec_id) for ns, spec_id in sorted(keys)]


def acting(plan: Plan) -> list[Change]:
    """The changes apply makes, in order: all but the no-ops (a move's relabel is made)."""
    return sorted((c for c in plan.changes if c.action is not Action.NOOP or c.moved_from),
                  key=_order)


@contextmanager
def holding(t: Transport, plan: Plan, reporter: Reporter) -> Iterator[str]:
    """The leases of the specs ``plan`` changes, taken once every change is found to be one
    ftspec manages (``_guard``) and the user's access checked (``preflight``); nothing for a
    plan that changes nothing."""
    changes = acting(plan)
    if not changes:
        yield ""
        return
    for change in changes:  # a plan with anything ftspec does not manage changes nothing
        _guard(change)
    for warning in preflight(t, changes):
        reporter.event(f"warning: {warning}", warning=True)
    held: list[SpecLease] = []
    try:
        for lease in _leases(t, changes):
            lease.acquire()
            held.append(lease)
            reporter.event(f"lock acquired: lease {lease.namespace}/{lease.name}",
                           lease=lease.name)
        yield ""
    finally:
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda lease: lease.release(), held))


def act(t: Transport, plan: Plan, reporter: Reporter, *, force_conflicts: bool = False,
        docs: Mapping[str, SourceDoc] | None = None) -> ApplyResult:
    """``plan``'s changes in order, with ``holding`` held; ``docs``: spec file -> loaded
    spec, to place errors the server returns."""
    done: list[Change] = []
    failed: list[tuple[str, str]] = []
    applied: set[str] = set()
    for change in acting(plan):
        try:
            _execute(t, plan, change, reporter, force_conflicts, applied)
        except BackendError as exc:
            where = ""
            spec_path = getattr(exc, "spec_path", None)
            if spec_path and change.spec_file:
                from ftspec.reconciler.kubernetes.locate import locate

                doc = (docs or {}).get(change.spec_file)
                bad = getattr(exc, "bad_value", None)
                where = f"\n  at {locate(change.spec_file, spec_path, doc, bad)}"
            failed.append((change.address, str(exc) + where
                           + (f"\n  hint: {exc.hint}" if exc.hint else "")))
            if isinstance(exc, StalePlanError) or getattr(exc, "status", 0) in (401, 403):
                break
            if exc.retryable:
                break  # the server is unwell: stop; the next apply converges
            continue
        done.append(change)
        if change.after is not None and change.action is not Action.NOOP:
            meta = change.after.get("metadata") or {}
            applied.add(f"{change.after.get('kind')} {meta.get('name')}")
    return ApplyResult(applied=tuple(done), failed=tuple(failed))
