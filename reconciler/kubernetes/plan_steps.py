"""The steps of a Kubernetes plan, one function each (``KubernetesBackend._plan`` runs them):
list what ftspec owns, start the reads of each rendered object, decide each object against
the server's answer, and delete what no spec renders any more. A ``Draft`` collects the
changes, the digests of what they read, the warnings and the errors on the way."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ftspec.compiler.crd_rules import Violation
from ftspec.reconciler import engine
from ftspec.reconciler.backend import ABSENT, BackendError, Desired
from ftspec.reconciler.identity import named_object_moved
from ftspec.reconciler.kubernetes.crd_check import CrdRules, field_spec_path, rule_error
from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.locate import locate
from ftspec.reconciler.kubernetes.planner import (
    ObjectInput,
    OwnershipError,
    address,
    decide,
    destroy,
    left_sweep,
    orphan,
    owner_of,
    planned,
)
from ftspec.reconciler.kubernetes.reads import Applying, Early, Reader, raise_first
from ftspec.reconciler.kubernetes.resources import MANAGED_KINDS, runtime_needed
from ftspec.reconciler.kubernetes.runtime_drift import live_runtime_drift
from ftspec.reconciler.kubernetes.transport import Transport
from ftspec.reconciler.model import Action, Change, Plan
from ftspec.spec.ir import Job

Obj = dict[str, Any]
Owned = dict[str, list[Obj]]
"""``namespace/spec_id`` -> the live objects ftspec labelled with that spec id."""
Stray = tuple[Desired, Obj]


def read_digest(live: Obj | None) -> str:
    if live is None:
        return ABSENT
    return "rv:" + str((live.get("metadata") or {}).get("resourceVersion"))


def read_digests(t: Transport, plan: Plan) -> dict[str, str]:
    """Each object ``plan`` read and changes, read again now and digested as ``Draft.add``
    digested it (``Backend.read_digests``), all at once."""
    objs = {c.address: c.after or c.before or {} for c in plan.changes}
    addrs = [a for a in plan.read_digests if a in objs]
    reader = Reader(t)
    try:
        return dict(zip(addrs, reader.pool.map(lambda a: read_digest(reader.get(objs[a])),
                                               addrs)))
    finally:
        reader.close()


def owner_key(job: Job) -> str:
    """The key of ``job``'s objects in ``Owned``."""
    return f"{job.namespace}/{job.spec_id}"


@dataclass
class Draft:
    """A plan being built: its changes, the digests of what they read, warnings, errors."""

    warnings: list[str]
    changes: list[Change] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)
    later: list[tuple[int, Future[str | None]]] = field(default_factory=list)
    """Warnings still being read (a live TrainJob's runtime drift), each with the place in
    ``warnings`` it takes: the order is the objects', as if each had been read in turn."""

    def add(self, addr: str, change: Change, live: Obj | None) -> None:
        self.digests[addr] = read_digest(live)
        self.changes.append(change)

    def warn_later(self, warning: Future[str | None]) -> None:
        self.later.append((len(self.warnings), warning))

    def settle(self) -> None:
        """Wait for the warnings still being read and put each at its place (None: no
        warning); the first in order that failed raises, as it did read in turn."""
        found = [(at, warning.result()) for at, warning in self.later]
        self.later.clear()
        for at, warning in reversed(found):  # from the end: earlier places stay put
            if warning:
                self.warnings.insert(at, warning)


def read_owned(reader: Reader, desired: Sequence[Desired], early: Early | None) -> Owned:
    """What ftspec owns in the kinds and namespaces ``desired`` manage (the listings
    ``early`` started are taken, the others read now); the first failed listing raises."""
    scopes = sorted({(kind, d.job.namespace) for d in desired
                     for kind in MANAGED_KINDS.get(d.job.target, ())})
    lists = {scope: (early and early.take_owned(*scope)) or reader.submit(reader.owned, *scope)
             for scope in scopes}
    owned: Owned = {}
    errors: list[BaseException] = []
    for (_kind, ns), fut in lists.items():
        try:
            for item in fut.result():
                spec_id = owner_of(item)
                if spec_id:
                    owned.setdefault(f"{ns}/{spec_id}", []).append(item)
        except BaseException as exc:  # noqa: BLE001 - reported below, first one wins
            errors.append(exc)
    raise_first(errors)
    return owned


def destroy_owned(desired: Sequence[Desired], owned: Owned, strays: list[Stray],
                  draft: Draft) -> None:
    """Every object of ``desired``, then every stray point of their sweeps, deleted."""
    for d in desired:
        for item in owned.get(owner_key(d.job), []):
            change = destroy(d.job.target, item, d.spec_file)
            draft.add(change.address, change, item)
    for d, item in strays:  # every point of the spec, in the grid or not
        change = destroy(d.job.target, item, d.spec_file)
        draft.add(change.address, change, item)


@dataclass(frozen=True)
class Pending:
    """A rendered object with its reads under way: the live object (None: it was listed
    among the owned ones) and what applying it would make of it."""

    desired: Desired
    obj: Obj
    addr: str
    live: Future[Obj | None] | None
    applying: Applying


def submit_reads(reader: Reader, early: Early | None, rendered: list[tuple[Desired, Obj]],
                 by_addr: dict[str, Obj]) -> list[Pending]:
    """Start the reads of each rendered object (dry-runs ``early`` started are taken)."""
    pending: list[Pending] = []
    for d, obj in rendered:
        addr = address(d.job.target, obj)
        live = None if addr in by_addr else reader.submit(reader.get, obj)
        applying = ((early and early.take_dry_run(obj))
                    or reader.applying(obj, partial(by_addr.get, addr)))
        pending.append(Pending(d, obj, addr, live, applying))
    return pending


@dataclass(frozen=True)
class Context:
    """What deciding any one object reads besides the object itself."""

    reader: Reader
    rules: CrdRules
    by_addr: dict[str, Obj]
    """The owned objects by address (their live state, already read)."""
    taken: set[str]
    """The spec ids of this plan."""
    version: str | None
    """The Trainer API version the TrainJobs were rendered for."""
    rendered: dict[str, Pending] = field(default_factory=dict)
    """Every object of this plan by address, with its reads."""


@dataclass(frozen=True)
class ServerRead:
    """The server's answers for one object."""

    live: Obj | None
    dry: Obj | None
    moved: list[Violation]
    """The CRD's transition rules the update from the live object breaks."""
    refused: ApiError | None
    """The dry-run's refusal of an update: a 422 or an admission webhook's (an immutable
    field, if the plan replaces the object)."""
    deferred: str | None = None
    """Why the server could not check the object yet: an object it needs is one this plan
    creates (a TrainJob on its new runtime); apply checks it once that exists."""


DEFERRED = "checked after its {what} exists"
"""The mark of a change whose dry run waits for an object the same plan creates."""


def created_here(ctx: Context, p: Pending) -> str | None:
    """The object of this plan that ``p`` needs and apply creates first (a TrainJob's
    runtime), as ``Kind name``; None when it needs none or that one is live."""
    runtime = runtime_needed(p.obj)
    if runtime is None:
        return None
    kind, name = runtime
    ns = (p.obj.get("metadata") or {}).get("namespace") if kind == "TrainingRuntime" else None
    addr = address(p.desired.job.target, {"kind": kind,
                                          "metadata": {"name": name, "namespace": ns}})
    needed = ctx.rendered.get(addr)
    if needed is None:
        return None
    live = ctx.by_addr.get(addr) if needed.live is None else needed.live.result()
    return None if live is not None else f"{kind} {name}"


def read_server(ctx: Context, p: Pending) -> ServerRead:
    """The live object and the dry-run of ``p``; raises what refuses the object."""
    live = ctx.by_addr.get(p.addr) if p.live is None else p.live.result()
    # an object unchanged since ftspec applied it is not written again: the CRD's rules
    # have nothing to refuse (evaluating them would build the CEL parser for nothing)
    broken, moved = ([], []) if p.applying.unchanged.result() \
        else ctx.rules.violations(p.obj, live)
    if broken:  # a modern server refuses this object whatever is live
        overrides = p.desired.job.spec.overrides.model_dump()
        raise_first([rule_error(p.obj, v, overrides) for v in broken])
    try:
        return ServerRead(live, p.applying.result.result(), moved, None)
    except ApiError as exc:
        needed = created_here(ctx, p) if exc.webhook else None
        if needed:  # refused because its runtime is not there yet: apply creates it first
            return ServerRead(live, None, moved, None, deferred=(
                f"{DEFERRED.format(what=needed)}: this plan creates it, and the admission "
                f"webhook {exc.webhook} refuses the object until then"))
        # a server with the CRD's transition rules (422), or a controller's webhook (the
        # Trainer's runtimePatches rule: 403), refuses the update of a field it keeps
        # immutable: fine when the plan replaces the object (plan_object)
        if (exc.status != 422 and exc.webhook is None) or live is None:
            raise
        return ServerRead(live, ctx.reader.created_result(p.obj), moved, exc)


def located(exc: BaseException, d: Desired, obj: Obj) -> BaseException:
    """``exc`` with the location of the spec field it is about, where it names one."""
    path = getattr(exc, "spec_path", None)
    if isinstance(exc, ApiError) and exc.fields:  # the user's patch, if it set it
        path = field_spec_path(d.job, obj, exc.fields[0]) or path
    if path:
        exc.location = locate(  # type: ignore[attr-defined]
            d.spec_file, path, d.doc, getattr(exc, "bad_value", None))
    elif isinstance(exc, ApiError) and exc.policy:  # a cluster policy names no field
        exc.location = (  # type: ignore[attr-defined]
            f"{d.spec_file} (its {obj.get('kind')}; the policy names no field)")
    return exc


def usable_dry_run(d: Desired, dry: Obj | None, warnings: list[str]) -> Obj | None:
    """The dry-run result to compare with (None: none), with a warning where there is none."""
    if dry is None:
        warnings.append(f"namespace {d.job.namespace} does not exist yet; "
                        "apply's preflight will stop until it does")
    elif "forbidden" in dry:
        warnings.append(f"server-side dry-run not allowed, planned without server "
                        f"defaults ({dry['forbidden']})")
        return None
    return dry


def object_change(ctx: Context, p: Pending, live: Obj | None, dry: Obj | None) -> Change:
    """The change for one object, settled by the engine (``engine.settled``: a replace
    where the inputs' content changed, ML lines, upgrade note) here rather than after the
    plan, as what follows reads the settled change: a refused dry run stands unless the
    object is replaced, a kept or updated TrainJob's runtime drift is read, a deferred
    check's note follows the reason. An object named like this job's but owned by another
    spec is adopted when the spec was renamed (``named_object_moved``)."""
    d = p.desired
    owner = owner_of(live) if live is not None else None
    move = named_object_moved(d.job, d.spec_file, owner, ctx.taken, Path.cwd()) \
        if owner and owner != d.job.spec_id else None
    inp = ObjectInput(d.job.target, d.job.spec_id, d.spec_file, p.obj, live, dry, ctx.version,
                      adopt_from=move.old_id if move else None,
                      moved=move.why if move else None)
    return engine.settled(planned(decide(inp), inp))


def plan_object(ctx: Context, p: Pending, draft: Draft) -> None:
    """Add the change of one rendered object to ``draft``, or the error that refuses it."""
    d = p.desired
    try:
        read = read_server(ctx, p)
    except BaseException as exc:  # noqa: BLE001
        draft.errors.append(located(exc, d, p.obj))
        return
    dry = usable_dry_run(d, read.dry, draft.warnings) if read.deferred is None else None
    try:
        change = object_change(ctx, p, read.live, dry)
    except OwnershipError as exc:
        draft.errors.append(BackendError(str(exc), hint="ftspec never touches objects it "
                                         "does not own"))
        return
    if read.deferred:  # on the change (JSON) and among the plan's warnings (its text)
        change = replace(change, reason="; ".join(filter(None, (change.reason,
                                                               read.deferred))))
        draft.warnings.append(f"{p.addr}: {read.deferred}")
    refused = read.refused
    if refused is not None and (change.action != Action.REPLACE and not read.moved):
        if refused.spec_path:  # not an immutable field: the server's refusal stands
            refused.location = locate(  # type: ignore[attr-defined]
                d.spec_file, refused.spec_path, d.doc, refused.bad_value)
        draft.errors.append(refused)
        return
    draft.add(p.addr, change, read.live)
    if read.live is not None and change.action in (Action.NOOP, Action.UPDATE):
        # its JobSet and runtime are read on the plan's pool, beside the other objects'
        draft.warn_later(ctx.reader.submit(live_runtime_drift, ctx.reader, read.live))


def plan_objects(ctx: Context, pending: Sequence[Pending], draft: Draft) -> None:
    """Add each rendered object's change to ``draft`` (``plan_object``), then the
    runtime-drift warnings read meanwhile, in the objects' order."""
    for p in pending:
        plan_object(ctx, p, draft)
    draft.settle()


def remove_unwanted(desired: Sequence[Desired], owned: Owned, wanted: set[str],
                    strays: list[Stray], draft: Draft) -> None:
    """Delete the objects of ``desired``'s specs that they no longer render, then the stray
    points left by their sweeps; other specs' objects are never ours to delete."""
    spec_files = {owner_key(d.job): d.spec_file for d in desired}
    for key, items in sorted(owned.items()):
        if key not in spec_files:
            continue  # another spec's objects: never ours to delete
        target = next(d.job.target for d in desired if owner_key(d.job) == key)
        for live in items:
            addr = address(target, live)
            if addr not in wanted:
                draft.add(addr, orphan(addr.split(".", 1)[0], live, spec_files[key]), live)
    for d, live in strays:
        change = left_sweep(d.job.target, live, d.spec_file)
        draft.add(change.address, change, live)
