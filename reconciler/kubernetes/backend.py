"""The Kubernetes backend: plan / apply / destroy / status for TrainJob and RayJob specs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from ftspec.compiler.pipeline import CompileOptions
from ftspec.reconciler.backend import (
    Backend,
    BackendError,
    Desired,
    Measurer,
    Prefetcher,
    Reporter,
    StaleWords,
)
from ftspec.reconciler.backends import BackendOptions
from ftspec.reconciler.kubernetes import render as rendering
from ftspec.reconciler.kubernetes import trainer_api
from ftspec.reconciler.kubernetes.crd_check import SKIPPED as CEL_SKIPPED
from ftspec.reconciler.kubernetes.crd_check import CrdRules
from ftspec.reconciler.kubernetes.kubeconfig import load_connection
from ftspec.reconciler.kubernetes.plan_steps import (
    Context,
    Draft,
    Owned,
    destroy_owned,
    owner_key,
    plan_objects,
    read_digests,
    read_owned,
    remove_unwanted,
    submit_reads,
)
from ftspec.reconciler.kubernetes.planner import address, spec_strays
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


class KubernetesBackend:
    name = "kubernetes"
    stale_words = StaleWords("{address}", versions=True,
                             hint="run `ftspec plan --out FILE` again and apply the new plan")

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
        pinned = next((job.trainer_pin for job in jobs
                       if job.target == "kubeflow" and job.trainer_pin), None)
        reader = Reader(self.transport)
        try:
            meta = reader.crd_metadata(rendering.TRAINJOB_CRD) if trainer_api.enabled() \
                else None
            kept = None if meta is None else trainer_api.recall(rendering.TRAINJOB_CRD, meta)
            crd = None if kept is not None else reader.crd(rendering.TRAINJOB_CRD)
        finally:
            reader.close()
        if kept is not None:  # the plan reads the whole CRD if it checks its rules
            return self._rendering_for(base, pinned, kept)
        self._crds[rendering.TRAINJOB_CRD] = crd  # plan checks its rules (crd_check)
        if crd is None:
            self._compile_warnings.append(
                "could not read the TrainJob CRD (not allowed); rendering for "
                f"Trainer API {pinned or PATCHES_TRAINER}")
            return replace(base, trainer_version=OVERRIDES_TRAINER
                           if pinned == OVERRIDES_TRAINER else PATCHES_TRAINER)
        if crd.get("missing"):
            from ftspec.reconciler.kubernetes.errors import missing_crd

            raise missing_crd(TRAINER_GROUP, TRAINER_API_VERSION, "TrainJob")
        return self._rendering_for(base, pinned,
                                   trainer_api.served(rendering.TRAINJOB_CRD, crd))

    def _rendering_for(self, base: CompileOptions, pinned: str | None, detected: str
                       ) -> CompileOptions:
        """Options that render for the Trainer API the cluster serves, ``detected``."""
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
        missing one an error at the spec field naming it (``PreflightError``); the job's
        name fits a runtime only the cluster knows (``names.name_check``). apply's own
        preflight checks every change again, with the user's access."""
        creating: dict[str, list[dict[str, Any]]] = {}
        for c in plan.changes:
            if c.spec_file and c.after is not None and c.action in (Action.CREATE,
                                                                   Action.REPLACE):
                creating.setdefault(c.spec_file, []).append(c.after)
        if not creating:  # a plan that creates nothing checks nothing (nor imports it)
            return
        from ftspec.reconciler.kubernetes.names import name_check
        from ftspec.reconciler.kubernetes.preflight import PreflightError, spec_preflight

        seen: dict[str, bool | None] = {}
        runtimes: dict[str, dict[str, Any] | None] = {}
        found: list[Diagnostic] = []
        for d in desired:
            objects = creating.get(d.spec_file)
            if objects:
                found += spec_preflight(self.transport, d, objects, seen)
                found += name_check(self.transport, d, runtimes)
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
        draft = Draft([] if destroy_all else list(self._compile_warnings))
        self._docs.update({d.spec_file: d.doc for d in desired if d.doc is not None})
        owned = read_owned(reader, desired, self._early)
        strays = spec_strays(desired, owned)
        if destroy_all:
            destroy_owned(desired, owned, strays, draft)
            return Plan(self.name, tuple(draft.changes), draft.digests, self._specs(desired),
                        tuple(draft.warnings))
        wanted = self._plan_rendered(reader, desired, owned, draft)
        raise_first(draft.errors)
        remove_unwanted(desired, owned, wanted, strays, draft)
        return Plan(self.name, tuple(draft.changes), draft.digests, self._specs(desired),
                    tuple(dict.fromkeys(draft.warnings)))

    def _plan_rendered(self, reader: Reader, desired: Sequence[Desired], owned: Owned,
                       draft: Draft) -> set[str]:
        """Add each rendered object's change to ``draft``; the addresses rendered."""
        rendered = [(d, obj) for d in desired for obj in self._render(d)]
        by_addr = {address(d.job.target, live): live for d in desired
                   for live in owned.get(owner_key(d.job), [])}
        pending = submit_reads(reader, self._early, rendered, by_addr)
        rules = CrdRules(reader, self._crds)
        if not rules.available:
            draft.warnings.append(CEL_SKIPPED)
        version = next((d.job.trainer_version for d in desired if d.job.target == "kubeflow"),
                       None)
        ctx = Context(reader, rules, by_addr, {d.job.spec_id for d in desired}, version,
                      {p.addr: p for p in pending})
        plan_objects(ctx, pending, draft)
        return {p.addr for p in pending}

    @staticmethod
    def _specs(desired: Sequence[Desired]) -> dict[str, str]:
        return {d.spec_file: d.job.written for d in desired}

    # ------------------------------------------------------------------ apply
    def read_digests(self, plan: Plan) -> dict[str, str]:
        """The digest of each object ``plan`` read and changes, read now; nothing when the
        plan changes nothing (applying nothing cannot go wrong, and a running job's status
        moves its resourceVersion on all the time)."""
        from ftspec.reconciler.kubernetes.applier import acting

        return read_digests(self.transport, plan) if acting(plan) else {}

    def holding(self, plan: Plan, reporter: Reporter) -> AbstractContextManager[str]:
        """The leases of the specs ``plan`` changes, after its preflight."""
        from ftspec.reconciler.kubernetes.applier import holding

        return holding(self.transport, plan, reporter)

    def act(self, plan: Plan, reporter: Reporter) -> ApplyResult:
        from ftspec.reconciler.kubernetes.applier import act

        return act(self.transport, plan, reporter,
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
        stuck = phase in (Phase.PENDING, Phase.FAILED, Phase.UNKNOWN)
        pods = self._pods(live) if phase is not Phase.SUCCEEDED else {}  # retried pods too
        events = self._warnings(live, pods) if stuck else []
        return (job_status(desired.job, addr, live, lines, pods=pods, events=events),
                metric_lines(lines))

    def _warnings(self, live: dict[str, Any], pods: dict[str, dict[str, Any]]
                  ) -> list[dict[str, Any]]:
        """The Warning Events of the job and its children (``events.py``), or none while
        unreadable."""
        from ftspec.reconciler.kubernetes.events import job_names, warning_events

        try:
            return warning_events(self.transport, live, pods, job_names(self.transport, live))
        except BackendError:
            return []

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
                            status.message, status.metrics.get("elapsed_s"))

        return wait_until_done(look, lambda: latest[0], tracker=tracker_for(desired.job),
                               reporter=reporter, address=self._address(desired),
                               timeout_s=timeout_s)

    def measured(self, desired: Desired, reporter: Reporter | None = None) -> dict[str, Any]:
        """The ended job's measured properties from the end of its log, with what the
        cluster cannot tell under ``unavailable`` (``kubernetes/measure.py``): reads of the
        log's end, nothing long to tell ``reporter``."""
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

CHECKED: tuple[type[Backend], type[Prefetcher], type[Measurer]] = (
    KubernetesBackend, KubernetesBackend, KubernetesBackend)
"""The Backend protocol and the capabilities KubernetesBackend offers
(``reconciler.backend.CAPABILITIES``), checked by mypy --strict here."""
