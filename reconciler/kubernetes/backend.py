"""The Kubernetes backend: plan / apply / destroy / status for TrainJob and RayJob specs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

from ftspec.compiler.pipeline import CompileOptions
from ftspec.reconciler.backend import BackendError, Desired, Reporter
from ftspec.reconciler.backends import BackendOptions
from ftspec.reconciler.identity import named_object_moved
from ftspec.reconciler.kubernetes import render as rendering
from ftspec.reconciler.kubernetes.crd_check import SKIPPED as CEL_SKIPPED
from ftspec.reconciler.kubernetes.crd_check import CrdRules, field_spec_path, rule_error
from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.kubeconfig import load_connection
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
    spec_strays,
)
from ftspec.reconciler.kubernetes.reads import Early, Reader, raise_first
from ftspec.reconciler.kubernetes.resources import JOB_KIND, KINDS, MANAGED_KINDS, describe
from ftspec.reconciler.kubernetes.status import phase_of
from ftspec.reconciler.kubernetes.transport import Transport
from ftspec.reconciler.model import Action, ApplyResult, Phase, Plan, Status
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job
from ftspec.spec.loader import SourceDoc
from ftspec.spec.platforms import (
    OVERRIDES_TRAINER,
    PATCHES_TRAINER,
    TRAINER_API_VERSION,
    TRAINER_GROUP,
)

ABSENT = "absent"


def read_digest(live: dict[str, Any] | None) -> str:
    if live is None:
        return ABSENT
    return "rv:" + str((live.get("metadata") or {}).get("resourceVersion"))


class KubernetesBackend:
    name = "kubernetes"

    def __init__(self, options: BackendOptions) -> None:
        self.options = options
        self._transport: Transport | None = None
        self._compile_warnings: list[str] = []
        self._docs: dict[str, SourceDoc] = {}
        """spec file -> its loaded document, to locate errors found while applying."""
        self._early: Early | None = None
        """Reads started before ``plan`` (``prefetch``), taken by the next plan."""
        self._crds: dict[str, dict[str, Any] | None] = {}
        """CRDs read in this run (name -> CRD; None: not readable), read once."""
        self._rendered: dict[int, tuple[Desired, list[dict[str, Any]]]] = {}
        """id(desired) -> the objects rendered for it (the Desired kept: ids stay unique)."""

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            conn = load_connection(self.options.kubeconfig, self.options.context)
            self._transport = Transport(conn)
        return self._transport

    # ------------------------------------------------------------------ compile
    def compile_options(self, jobs: Sequence[Job], base: CompileOptions) -> CompileOptions:
        """Render TrainJobs for the Trainer API the cluster serves (read from its CRD)."""
        self._compile_warnings = []
        early = self._early_reads()
        for scope in sorted({(kind, job.namespace) for job in jobs
                             for kind in MANAGED_KINDS.get(job.target, ())}):
            early.owned(*scope)  # listed while the specs compile
        if not any(job.target == "kubeflow" for job in jobs):
            return base
        reader = Reader(self.transport)
        try:
            crd = reader.crd(rendering.TRAINJOB_CRD)
        finally:
            reader.close()
        self._crds[rendering.TRAINJOB_CRD] = crd  # plan checks its rules (crd_check)
        pinned = next((job.trainer_pin for job in jobs
                       if job.target == "kubeflow" and job.trainer_pin), None)
        if crd is None:
            self._compile_warnings.append(
                "could not read the TrainJob CRD (not allowed); rendering for "
                f"Trainer API {pinned or PATCHES_TRAINER}")
            return replace(base, trainer_version=OVERRIDES_TRAINER
                           if pinned == OVERRIDES_TRAINER else PATCHES_TRAINER)
        if crd.get("missing"):
            from ftspec.reconciler.kubernetes.errors import missing_crd

            raise missing_crd(TRAINER_GROUP, TRAINER_API_VERSION, "TrainJob")
        detected = rendering.trainer_version_from_crd(crd)
        if pinned and (pinned == OVERRIDES_TRAINER) != (detected == OVERRIDES_TRAINER):
            self._compile_warnings.append(
                f"spec pins Trainer API {pinned} but the cluster serves {detected}; "
                f"rendering for {detected}")
        return replace(base, trainer_version=detected)

    # ------------------------------------------------------------------ plan
    def _early_reads(self) -> Early:
        if self._early is None:
            self._early = Early(self.transport)
        return self._early

    def prefetch(self, desired: Desired) -> None:
        """Start the server-side dry-runs of ``desired``'s objects (``Prefetcher``)."""
        early = self._early_reads()
        for obj in self._render(desired):
            early.dry_run(obj)

    def _render(self, desired: Desired) -> list[dict[str, Any]]:
        """``rendering.render`` once per Desired: prefetch and plan share the objects."""
        kept = self._rendered.get(id(desired))
        if kept is None:
            kept = self._rendered[id(desired)] = (desired, rendering.render(desired))
        return kept[1]

    def drop_prefetched(self) -> None:
        if self._early is not None:
            self._early.close(cancel=True)
            self._early = None
        self._rendered.clear()

    def plan(self, desired: Sequence[Desired]) -> Plan:
        reader = Reader(self.transport)
        try:
            plan = self._plan(reader, desired, destroy_all=False)
        finally:
            reader.close()
            self.drop_prefetched()
        self._preflight(plan, desired)
        return plan

    def _preflight(self, plan: Plan, desired: Sequence[Desired]) -> None:
        """What the objects apply would create (or re-create) reference exists: each
        missing one an error at the spec field naming it (``PreflightError``). apply's own
        preflight checks every change again, with the user's access."""
        from ftspec.reconciler.kubernetes.preflight import PreflightError, spec_preflight

        seen: dict[str, bool | None] = {}
        found: list[Diagnostic] = []
        for d in desired:
            objects = [c.after for c in plan.changes if c.spec_file == d.spec_file
                       and c.after is not None and c.action in (Action.CREATE, Action.REPLACE)]
            if objects:
                found += spec_preflight(self.transport, d, objects, seen)
        if found:
            raise PreflightError(found)

    def plan_destroy(self, desired: Sequence[Desired]) -> Plan:
        reader = Reader(self.transport)
        try:
            return self._plan(reader, desired, destroy_all=True)
        finally:
            reader.close()
            self.drop_prefetched()

    def _plan(self, reader: Reader, desired: Sequence[Desired], *, destroy_all: bool) -> Plan:
        warnings: list[str] = [] if destroy_all else list(self._compile_warnings)
        self._docs.update({d.spec_file: d.doc for d in desired if d.doc is not None})
        scopes = sorted({(kind, d.job.namespace) for d in desired
                         for kind in MANAGED_KINDS.get(d.job.target, ())})
        early = self._early
        lists = {scope: (early and early.take_owned(*scope)) or reader.submit(reader.owned, *scope)
                 for scope in scopes}
        version = next((d.job.trainer_version for d in desired if d.job.target == "kubeflow"),
                       None)
        owned: dict[str, list[dict[str, Any]]] = {}
        errors: list[BaseException] = []
        for (kind, ns), fut in lists.items():
            try:
                for item in fut.result():
                    spec_id = owner_of(item)
                    if spec_id:
                        owned.setdefault(f"{ns}/{spec_id}", []).append(item)
            except BaseException as exc:  # noqa: BLE001 - reported below, first one wins
                errors.append(exc)
        raise_first(errors)

        digests: dict[str, str] = {}
        changes = []
        strays = spec_strays(desired, owned)
        if destroy_all:
            for d in desired:
                for item in owned.get(f"{d.job.namespace}/{d.job.spec_id}", []):
                    change = destroy(d.job.target, item, d.spec_file)
                    digests[change.address] = read_digest(item)
                    changes.append(change)
            for d, item in strays:  # every point of the spec, in the grid or not
                change = destroy(d.job.target, item, d.spec_file)
                digests[change.address] = read_digest(item)
                changes.append(change)
            return Plan(self.name, tuple(changes), digests, self._specs(desired),
                        tuple(warnings))

        rendered = [(d, obj) for d in desired for obj in self._render(d)]
        taken = {d.job.spec_id for d in desired}
        wanted = {address(d.job.target, obj) for d, obj in rendered}
        by_addr = {address(d.job.target, live): live for d in desired
                   for live in owned.get(f"{d.job.namespace}/{d.job.spec_id}", [])}
        live_futs: list[Future[dict[str, Any] | None] | None] = []
        dry_futs = []
        for d, obj in rendered:
            addr = address(d.job.target, obj)
            live_futs.append(None if addr in by_addr else reader.submit(reader.get, obj))
            dry_futs.append((early and early.take_dry_run(obj))
                            or reader.submit(reader.applied_result, obj, by_addr.get(addr)))
        rules = CrdRules(reader, self._crds)
        if not rules.available:
            warnings.append(CEL_SKIPPED)
        for (d, obj), live_fut, dry_fut in zip(rendered, live_futs, dry_futs):
            addr = address(d.job.target, obj)
            refused: ApiError | None = None
            try:
                live = by_addr.get(addr) if live_fut is None else live_fut.result()
                broken, moved = rules.violations(obj, live)
                if broken:  # a modern server refuses this object whatever is live
                    overrides = d.job.spec.overrides.model_dump()
                    raise_first([rule_error(obj, v, overrides) for v in broken])
                try:
                    dry = dry_fut.result()
                except ApiError as exc:
                    # a server with the CRD's transition rules refuses the update of an
                    # immutable field: fine when the plan replaces the object (below)
                    if exc.status != 422 or live is None:
                        raise
                    dry, refused = reader.created_result(obj), exc
            except BaseException as exc:  # noqa: BLE001
                path = getattr(exc, "spec_path", None)
                if isinstance(exc, ApiError) and exc.fields:  # the user's patch, if it set it
                    path = field_spec_path(d.job, obj, exc.fields[0]) or path
                if path:
                    exc.location = locate(  # type: ignore[attr-defined]
                        d.spec_file, path, d.doc, getattr(exc, "bad_value", None))
                errors.append(exc)
                continue
            if dry is None:
                warnings.append(f"namespace {d.job.namespace} does not exist yet; "
                                "apply's preflight will stop until it does")
            elif "forbidden" in dry:
                warnings.append(f"server-side dry-run not allowed, planned without server "
                                f"defaults ({dry['forbidden']})")
                dry = None
            owner = owner_of(live) if live is not None else None
            move = named_object_moved(d.job, d.spec_file, owner, taken, Path.cwd()) \
                if owner and owner != d.job.spec_id else None
            try:
                change = decide(ObjectInput(
                    d.job.target, d.job.spec_id, d.spec_file, obj, live, dry, version,
                    adopt_from=move.old_id if move else None, moved=move.why if move else None))
            except OwnershipError as exc:
                errors.append(BackendError(str(exc), hint="ftspec never touches objects it "
                                           "does not own"))
                continue
            if refused is not None and (change.action != Action.REPLACE and not moved):
                if refused.spec_path:  # not an immutable field: the server's 422 stands
                    refused.location = locate(  # type: ignore[attr-defined]
                        d.spec_file, refused.spec_path, d.doc, refused.bad_value)
                errors.append(refused)
                continue
            digests[addr] = read_digest(live)
            changes.append(change)
        raise_first(errors)
        spec_files = {f"{d.job.namespace}/{d.job.spec_id}": d.spec_file for d in desired}
        for key, items in sorted(owned.items()):
            if key not in spec_files:
                continue  # another spec's objects: never ours to delete
            for live in items:
                addr = address(next(d.job.target for d in desired
                                    if f"{d.job.namespace}/{d.job.spec_id}" == key), live)
                if addr not in wanted:
                    digests[addr] = read_digest(live)
                    changes.append(orphan(addr.split(".", 1)[0], live, spec_files[key]))
        for d, live in strays:
            change = left_sweep(d.job.target, live, d.spec_file)
            digests[change.address] = read_digest(live)
            changes.append(change)
        return Plan(self.name, tuple(changes), digests, self._specs(desired),
                    tuple(dict.fromkeys(warnings)))

    @staticmethod
    def _specs(desired: Sequence[Desired]) -> dict[str, str]:
        return {d.spec_file: d.job.written for d in desired}

    # ------------------------------------------------------------------ apply
    def apply(self, plan: Plan, reporter: Reporter) -> ApplyResult:
        from ftspec.reconciler.kubernetes.applier import apply_plan

        return apply_plan(self.transport, plan, reporter,
                          force_conflicts=self.options.force_conflicts, docs=self._docs)

    # ------------------------------------------------------------------ status
    def _job_object(self, desired: Desired) -> dict[str, Any]:
        kind = JOB_KIND.get(desired.job.target)
        if kind is None:
            raise BackendError(f"deploy.target {desired.job.target!r} is not a Kubernetes target")
        res = KINDS[kind]
        return {"apiVersion": res.api_version, "kind": kind,
                "metadata": {"name": desired.job.name, "namespace": desired.job.namespace}}

    def status(self, desired: Desired) -> list[Status]:
        return [self._status(desired)[0]]

    def _status(self, desired: Desired) -> tuple[Status, list[str]]:
        """The status, with the log lines (of one pod) it read the training metrics from."""
        from ftspec.reconciler.kubernetes.observe import job_status, metric_lines

        ref = self._job_object(desired)
        addr = address(desired.job.target, ref)
        live = Reader(self.transport).get(ref)
        if live is None:
            return Status(addr, Phase.UNKNOWN,
                          f"{describe(ref)} not found (not applied yet?)"), []
        phase = phase_of(live)[0]
        lines = self._pod_lines(live) if phase is not Phase.PENDING else []
        pods = self._pods(live) if phase is Phase.FAILED else {}
        return job_status(desired.job, addr, live, lines, pods=pods), metric_lines(lines)

    def _pods(self, live: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The job's pods (their termination reasons), or none while unreadable."""
        from ftspec.reconciler.kubernetes.logs import job_pods

        try:
            return job_pods(self.transport, live)
        except BackendError:
            return {}

    def _pod_lines(self, live: dict[str, Any]) -> list[str]:
        """``[pod] text`` lines of the job's pods, or none while unreadable."""
        from ftspec.reconciler.kubernetes.logs import job_logs

        try:
            return list(job_logs(self.transport, live))
        except BackendError:
            return []

    def wait(self, desired: Desired, reporter: Reporter, timeout_s: float | None = None
             ) -> Status:
        from ftspec.reconciler.logread import LogFollowerText
        from ftspec.reconciler.progress import tracker_for
        from ftspec.reconciler.waiting import Observed, wait_until_done

        seen = LogFollowerText()
        latest: list[Status] = []

        def look() -> Observed:
            status, lines = self._status(desired)
            latest[:] = [status]
            return Observed(status.phase, seen.new_lines("\n".join(lines) + "\n"),
                            status.message)

        return wait_until_done(look, lambda: latest[0], tracker=tracker_for(desired.job),
                               reporter=reporter, address=self._address(desired),
                               timeout_s=timeout_s)

    def measured(self, desired: Desired) -> dict[str, Any]:
        """The ended job's measured properties from the end of its log, with what the
        cluster cannot tell under ``unavailable`` (``kubernetes/measure.py``)."""
        from ftspec.reconciler.kubernetes.measure import measured

        live = Reader(self.transport).get(self._job_object(desired))
        return {} if live is None else measured(self.transport, desired.job, live)

    def _address(self, desired: Desired) -> str:
        return address(desired.job.target, self._job_object(desired))

    def logs(self, desired: Desired, *, follow: bool = False, tail: int | None = None,
             selector: str | None = None) -> Iterator[str]:
        from ftspec.reconciler.kubernetes.logs import job_logs

        ref = self._job_object(desired)
        live = Reader(self.transport).get(ref)
        if live is None:
            raise BackendError(f"{describe(ref)} not found",
                               hint="run `ftspec apply` first")
        return job_logs(self.transport, live, follow=follow, tail=tail, selector=selector,
                        reread=lambda: Reader(self.transport).get(ref))


def make_backend(options: BackendOptions) -> KubernetesBackend:
    return KubernetesBackend(options)
