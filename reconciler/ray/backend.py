"""The Ray backend (``deploy.target: ray``): jobs on an existing cluster via the Jobs API.

Ray is the state: a job is ftspec's when its metadata says so (``app.kubernetes.io/managed-by:
ftspec``) and belongs to a spec through ``ftspec.dev/spec-id``; its metadata also holds the
applied record (``ftspec.reconciler.applied``). One resource per spec, ``ray.job.<spec-id>``.
A live job is the spec's current one when it runs what the spec would submit now
(``reconciler.ray.compare``: entrypoint, runtime environment, files, resources; not the
submission id, not ftspec's metadata), so a new ftspec that submits the same run keeps it.
Otherwise Ray jobs being immutable, a change is a replace (stop + delete the old job, submit
the new, whose id is the spec name + a digest of its content). A current job that was
STOPPED outside ftspec is drift; one that FAILED is submitted again (both replaces). Jobs
of a spec file that no longer produces them (renamed spec id, a point no longer in
``sweep.grid``) are cleaned up, and deleted by ``destroy`` with the spec's own.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ftspec.compiler.pipeline import CompileOptions
from ftspec.compiler.summary import SUMMARY_ANNOTATION
from ftspec.reconciler.applied import RECORD_KEY, applied_summary, decode, encode, record_of
from ftspec.reconciler.backend import (
    ABSENT,
    Backend,
    BackendError,
    Desired,
    Measurer,
    Preflighter,
    Reporter,
    StaleWords,
)
from ftspec.reconciler.driver_logs import one_log, refuse_selector
from ftspec.reconciler.failure import describe, reason
from ftspec.reconciler.identity import Moved, moved
from ftspec.reconciler.logread import LogFollowerText, TextLog, tail_lines
from ftspec.reconciler.measured import measure, short_of_plan
from ftspec.reconciler.model import (
    Action,
    ApplyResult,
    Change,
    FieldChange,
    Phase,
    Plan,
    Planned,
    Reads,
    Replacing,
    Status,
    Summaries,
    Upgrading,
)
from ftspec.reconciler.outputs import location, scan
from ftspec.reconciler.progress import (
    clean_lines,
    status_metrics,
    track_text,
    tracker_for,
    tracker_settings,
)
from ftspec.reconciler.ray.compare import run_changes
from ftspec.reconciler.ray.jobsapi import TERMINAL, JobsApi, resolve_address
from ftspec.reconciler.ray.preflight import Cluster, check, cluster_of
from ftspec.reconciler.waiting import Observed, wait_until_done
from ftspec.runtime.ray_nodes.wire import node_states
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import SPEC_HASH_ANNOTATION, Job
from ftspec.spec.ownership import SPEC_ID_LABEL, owned_spec_id
from ftspec.targets.ray_payload import NAME_KEY

PREFIX = "ray.job."
SPEC_FILE_KEY = "ftspec.dev/spec-file"
PHASES = {"PENDING": Phase.PENDING, "RUNNING": Phase.RUNNING, "SUCCEEDED": Phase.SUCCEEDED,
          "FAILED": Phase.FAILED, "STOPPED": Phase.FAILED}
_STOP_TIMEOUT_S = 60.0
_SETTLE_S = 3.0
"""How long a deleted job must stay gone before its submission id counts as free."""


def address(spec_id: str) -> str:
    return PREFIX + spec_id


def _spec_file(path: str) -> str:
    full = Path(path).resolve()
    try:
        return str(full.relative_to(Path.cwd()))
    except ValueError:
        return str(full)


def submission(d: Desired) -> dict[str, Any]:
    """The Jobs API payload: the ray target's artifact, with ownership metadata ensured."""
    objs = [a.obj for a in d.artifacts if a.kind == "submission" and a.obj is not None]
    if not objs:
        raise BackendError("the ray target produced no Jobs API submission")
    payload: dict[str, Any] = json.loads(json.dumps(dict(objs[0])))
    job = d.job
    if not payload.get("submission_id"):
        raise BackendError("the ray target's submission has no submission_id")
    meta = {str(k): str(v) for k, v in (payload.get("metadata") or {}).items()}
    meta.update({SPEC_FILE_KEY: _spec_file(d.spec_file), RECORD_KEY: encode(record_of(job, d.inputs))})
    payload["metadata"] = meta
    return payload


def _owned(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [j for j in jobs if owned_spec_id(j.get("metadata"))]


def _select(owned: list[dict[str, Any]], d: Desired, taken: set[str]
            ) -> tuple[list[dict[str, Any]], Moved | None]:
    """The jobs of ``d``'s job: under its id, else under the id an earlier ftspec gave it
    (``reconciler.identity.moved``; the job's recorded metadata.name must be this one's)."""
    mine = [j for j in owned if j["metadata"][SPEC_ID_LABEL] == d.job.spec_id]
    if mine:
        return mine, None
    for old_id in sorted({j["metadata"][SPEC_ID_LABEL] for j in owned} - taken):
        jobs = [j for j in owned if j["metadata"][SPEC_ID_LABEL] == old_id]
        meta = jobs[0]["metadata"]
        if meta.get(NAME_KEY, d.job.name) != d.job.name:
            continue
        move = moved(d.job, d.spec_file, old_id, meta.get(SPEC_FILE_KEY), Path.cwd())
        if move is not None:
            return jobs, move
    return [], None


def _brief(job: dict[str, Any]) -> dict[str, Any]:
    meta = job.get("metadata") or {}
    return {"submission_id": job.get("submission_id"), "status": job.get("status"),
            "spec_file": meta.get(SPEC_FILE_KEY),
            "message": job.get("message"), "driver_exit_code": job.get("driver_exit_code")}


def _started(job: dict[str, Any]) -> float:
    value = job.get("start_time")
    return float(value) if isinstance(value, (int, float)) else 0.0


def _replacing(d: Desired, mine: list[dict[str, Any]], old: dict[str, Any],
               before: dict[str, Any] | None, after: dict[str, Any]) -> Replacing:
    """The replace of ``d``'s jobs by a new one (``after``): Ray jobs are immutable. ``old``:
    the job it follows (what the applied record and ML lines are read from)."""
    old_meta = old.get("metadata") or {}
    sid = after["submission_id"]
    fields = run_changes(old, after)
    active = [str(j.get("submission_id")) for j in mine if j.get("status") not in TERMINAL]
    then = f": Ray jobs are immutable, the new job gets id {sid}"
    if active:
        then += f"; {', '.join(active)} is stopped first"
    upgrading = Upgrading(decode(old_meta.get(RECORD_KEY)), d.job,
                          legacy=SPEC_HASH_ANNOTATION in old_meta) if fields else None
    change = Planned(address(d.job.spec_id), Action.REPLACE, before, after, reason=then,
                     spec_file=d.spec_file,
                     fields=(FieldChange("submission_id", old.get("submission_id"), sid, True),
                             *fields),
                     summaries=Summaries(applied_summary(old_meta, SUMMARY_ANNOTATION),
                                         d.job.summary),
                     upgrading=upgrading)
    return Replacing(change, f"what would run changed ({', '.join(f.path for f in fields)})"
                     if fields else None)


def _digest(jobs: list[dict[str, Any]]) -> str:
    ids = sorted(str(j.get("submission_id")) for j in jobs)
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16] if ids else ABSENT


def _strays(desired: Sequence[Desired], listed: dict[str, list[dict[str, Any]]],
            taken: set[str]) -> Iterator[tuple[str, str, list[dict[str, Any]]]]:
    """(address, spec id, jobs) of the desired spec files' jobs that no desired job is
    (``taken``: the desired ids and the ids their moves came from): points that left a
    sweep's grid, a spec's jobs from before its id was renamed."""
    files = {_spec_file(d.spec_file) for d in desired}
    for url, owned in listed.items():
        stale: dict[str, list[dict[str, Any]]] = {}
        for j in owned:
            meta = j["metadata"]
            if meta[SPEC_ID_LABEL] not in taken and meta.get(SPEC_FILE_KEY) in files:
                stale.setdefault(meta[SPEC_ID_LABEL], []).append(j)
        for spec_id, jobs in stale.items():
            yield url, spec_id, jobs


def _delete(url: str, spec_id: str, jobs: list[dict[str, Any]], spec_file: str,
            why: str) -> Change:
    return Change(address(spec_id), Action.DELETE,
                  {"address": url, "jobs": [_brief(j) for j in jobs]}, None, reason=why,
                  spec_file=spec_file)


class RayBackend:
    name = "ray"
    stale_words = StaleWords("the Ray jobs of {address}", created="changed",
                             removed="changed", changed="changed")

    def __init__(self, address_override: str | None = None, *, timeout_s: float = 10.0) -> None:
        self.address_override = address_override
        self.timeout_s = timeout_s
        self._apis: dict[str, JobsApi] = {}
        self._clusters: dict[str, Cluster | str] = {}
        self._warnings: list[str] = []

    def api(self, d: Desired) -> JobsApi:
        url = resolve_address(self.address_override or d.job.spec.deploy.ray.address)
        if url not in self._apis:
            self._apis[url] = JobsApi(url, self.timeout_s)
        return self._apis[url]

    def compile_options(self, jobs: Sequence[Job], base: CompileOptions) -> CompileOptions:
        return base

    def preflight(self, d: Desired) -> list[Diagnostic]:
        """Can the cluster place the job (``reconciler.ray.preflight``)? Errors are returned;
        warnings (unreadable API, autoscaler assumed) go to the plan's warnings."""
        api = self.api(d)
        if api.address not in self._clusters:
            try:
                self._clusters[api.address] = cluster_of(api.nodes(), api.cluster_status())
            except (BackendError, ValueError) as exc:
                self._clusters[api.address] = str(exc)
                self._warnings.append(f"the resources of the Ray cluster at {api.address} "
                                      f"could not be read ({exc}); not checked")
        cluster = self._clusters[api.address]
        if isinstance(cluster, str):
            return []
        found = check(d, submission(d), cluster)
        for w in found:
            if not w.is_error and w.format() not in self._warnings:
                self._warnings.append(w.format())
        return [e for e in found if e.is_error]

    # ------------------------------------------------------------------ plan

    def _mine(self, d: Desired) -> list[dict[str, Any]]:
        return _select(_owned(self.api(d).list_jobs()), d, {d.job.spec_id})[0]

    def _change(self, d: Desired, mine: list[dict[str, Any]], move: Moved | None = None
                ) -> Change:
        change = self._decide(d, mine)
        if move is None:
            return change
        where = address(move.old_id)
        if isinstance(change, Planned) and change.replacing is not None:
            how = change.replacing()
            moved_how = replace(how, change=replace(how.change, moved_from=where,
                                                    moved=move.why))
            change = replace(change, replacing=lambda: moved_how)
        return replace(change, moved_from=where, moved=move.why + (
            "; a Ray job's metadata cannot change: it keeps its old id until it is replaced"
            if change.action is Action.NOOP else ""))

    def _decide(self, d: Desired, mine: list[dict[str, Any]]) -> Change:
        """The change of ``d``'s jobs (``mine``) on what would run; the engine replaces a
        kept job whose inputs' content changed (``Planned.reads``: the current job's record
        against the inputs now) as ``_replacing`` says."""
        after = {"address": self.api(d).address, **submission(d)}
        addr = address(d.job.spec_id)
        # the newest job that runs what the spec would submit now is the current one
        same = [j for j in mine if not run_changes(j, after)]
        current = max(same, key=_started) if same else None
        before = {"jobs": [_brief(j) for j in mine]} if mine else None
        others = [j for j in mine if j is not current]
        if current is None and not mine:
            return Change(addr, Action.CREATE, None, after, reason="no job of this spec",
                          spec_file=d.spec_file)
        applied_now = decode(((current or {}).get("metadata") or {}).get(RECORD_KEY))
        reads = Reads(applied_now.inputs if applied_now else None, d.inputs)
        old = max(others, key=_started) if others else current
        assert old is not None
        how = _replacing(d, mine, old, before, after)
        if current is not None and not others:
            live_id = str(current.get("submission_id"))
            status = str(current.get("status"))
            if status == "STOPPED":
                kept = Change(addr, Action.REPLACE, before, after, drift=True,
                              spec_file=d.spec_file, reason=f"job {live_id} was stopped "
                              "outside ftspec; it is resubmitted")
            elif status == "FAILED":
                kept = Change(addr, Action.REPLACE, before, after, spec_file=d.spec_file,
                              drift=True, reason=f"job {live_id} FAILED "
                              f"({current.get('message') or 'no message'}); it is resubmitted")
            else:
                kept = Change(addr, Action.NOOP, before, {**after, "submission_id": live_id},
                              spec_file=d.spec_file, reason=f"job {live_id} is {status}")
            return Planned.of(kept, reads=reads, replacing=lambda: how)
        why = how.why or "what would run changed (jobs)"
        return replace(how.change, reason=why + (how.change.reason or ""), reads=reads,
                       replacing=lambda: how)

    def _listed(self, desired: Sequence[Desired]) -> dict[str, list[dict[str, Any]]]:
        """Each cluster's ftspec jobs (Jobs API address -> jobs), listed once."""
        listed: dict[str, list[dict[str, Any]]] = {}
        for d in desired:
            api = self.api(d)
            if api.address not in listed:
                listed[api.address] = _owned(api.list_jobs())
        return listed

    def plan(self, desired: Sequence[Desired]) -> Plan:
        changes: list[Change] = []
        digests: dict[str, str] = {}
        listed = self._listed(desired)
        taken = {d.job.spec_id for d in desired}
        for d in desired:
            mine, move = _select(listed[self.api(d).address], d, taken)
            if move is not None:
                taken.add(move.old_id)
            change = self._change(d, mine, move)
            changes.append(change)
            digests[change.address] = _digest(mine)
        swept = {_spec_file(d.spec_file) for d in desired if d.job.point}
        for url, spec_id, jobs in _strays(desired, listed, taken):
            spec_file = jobs[0]["metadata"][SPEC_FILE_KEY]
            why = "not a point of its sweep.grid now" if spec_file in swept else \
                "spec id renamed"
            changes.append(_delete(url, spec_id, jobs, spec_file,
                                   f"{spec_file} no longer produces it ({why})"))
            digests[changes[-1].address] = _digest(jobs)
        return Plan(backend=self.name, changes=tuple(changes), read_digests=digests,
                    specs={d.spec_file: d.job.written for d in desired},
                    warnings=tuple(self._warnings))

    def plan_destroy(self, desired: Sequence[Desired]) -> Plan:
        listed = self._listed(desired)
        taken = {d.job.spec_id for d in desired}
        changes: list[Change] = []
        digests: dict[str, str] = {}
        for d in desired:
            url = self.api(d).address
            mine, move = _select(listed[url], d, taken)
            if move is not None:
                taken.add(move.old_id)
            if mine:
                addr = address(d.job.spec_id)
                changes.append(Change(
                    addr, Action.DELETE, {"address": url, "jobs": [_brief(j) for j in mine]},
                    None, reason="stops the job if it runs and deletes it", spec_file=d.spec_file,
                    moved_from=address(move.old_id) if move else None,
                    moved=move.why if move else None))
                digests[addr] = _digest(mine)
        for url, spec_id, jobs in _strays(desired, listed, taken):  # every point of a sweep
            changes.append(_delete(url, spec_id, jobs, jobs[0]["metadata"][SPEC_FILE_KEY],
                                   "stops the job if it runs and deletes it"))
            digests[changes[-1].address] = _digest(jobs)
        return Plan(backend=self.name, changes=tuple(changes), read_digests=digests,
                    specs={d.spec_file: d.job.written for d in desired},
                    warnings=tuple(self._warnings))

    # ------------------------------------------------------------------ apply

    def read_digests(self, plan: Plan) -> dict[str, str]:
        """The digest of each planned address's Ray jobs now (one listing per cluster)."""
        listed: dict[str, list[dict[str, Any]]] = {}
        now: dict[str, str] = {}
        for change in plan.changes:
            if change.address not in plan.read_digests:
                continue
            api = self._api_of(change)
            if api.address not in listed:
                listed[api.address] = _owned(api.list_jobs())
            spec_id = (change.moved_from or change.address)[len(PREFIX):]
            now[change.address] = _digest([j for j in listed[api.address]
                                           if j["metadata"][SPEC_ID_LABEL] == spec_id])
        return now

    def _api_of(self, change: Change) -> JobsApi:
        url = (change.after or change.before or {})["address"]
        return self._apis.setdefault(url, JobsApi(url, self.timeout_s))

    def holding(self, plan: Plan, reporter: Reporter) -> AbstractContextManager[str]:
        """Nothing: the Jobs API has no lock to take."""
        return nullcontext("")

    def act(self, plan: Plan, reporter: Reporter) -> ApplyResult:
        applied: list[Change] = []
        failed: list[tuple[str, str]] = []
        for change in plan.changes:
            if change.action is Action.NOOP:
                continue
            api = self._api_of(change)
            try:
                old = [str(j["submission_id"]) for j in (change.before or {}).get("jobs", [])]
                for sid in old:
                    self._remove(api, sid, reporter)
                if change.after is not None:
                    payload = {k: v for k, v in change.after.items() if k != "address"}
                    sid = api.submit(payload)
                    reporter.event(f"{change.address}: submitted job {sid}", submission_id=sid)
                applied.append(change)
            except BackendError as exc:
                failed.append((change.address, str(exc)))
        return ApplyResult(tuple(applied), tuple(failed))

    def _remove(self, api: JobsApi, sid: str, reporter: Reporter) -> None:
        """Stop (if active), wait for a terminal status, delete: frees the submission id."""
        job = api.get_job(sid)
        if job is None:
            return
        if job.get("status") not in TERMINAL:
            reporter.event(f"stopping job {sid}", submission_id=sid)
            api.stop(sid)
            deadline = time.monotonic() + _STOP_TIMEOUT_S
            while (job := api.get_job(sid)) is not None and job.get("status") not in TERMINAL:
                if time.monotonic() > deadline:
                    raise BackendError(f"job {sid} did not stop within {_STOP_TIMEOUT_S:.0f} s",
                                       retryable=True)
                time.sleep(0.5)
        api.delete(sid)
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        gone_since: float | None = None
        # The id is free only once the job is gone, and stays gone: Ray refuses a delete
        # while a stopped job winds down, and its job supervisor can write the job's final
        # record after the status turned terminal, bringing a deleted entry back.
        while gone_since is None or time.monotonic() - gone_since < _SETTLE_S:
            if self._gone(api, sid):
                if gone_since is None:
                    gone_since = time.monotonic()
            else:
                gone_since = None
                api.delete(sid)
            if time.monotonic() > deadline:
                raise BackendError(f"job {sid} was not deleted within {_STOP_TIMEOUT_S:.0f} s",
                                   retryable=True)
            time.sleep(0.5)
        reporter.event(f"deleted job {sid}", submission_id=sid)

    @staticmethod
    def _gone(api: JobsApi, sid: str) -> bool:
        """Gone from the job's own endpoint and from the list: the dashboard answers the two
        from different tables, and a list read just after a delete may still hold it."""
        return api.get_job(sid) is None and all(
            j.get("submission_id") != sid for j in api.list_jobs())

    # ------------------------------------------------------------------ observe

    def _current(self, d: Desired) -> dict[str, Any] | None:
        """The newest Ray job of this spec (the job's identity is enough: status and logs
        compile nothing; plan and apply leave at most one)."""
        mine = self._mine(d)
        return max(mine, key=_started) if mine else None

    def status(self, desired: Desired) -> list[Status]:
        addr = address(desired.job.spec_id)
        job = self._current(desired)
        if job is None:
            return [Status(addr, Phase.UNKNOWN, "not applied: no Ray job of this spec",
                           platform={"exists": False})]
        sid = str(job["submission_id"])
        raw = str(job.get("status"))
        phase = PHASES.get(raw, Phase.UNKNOWN)
        text = self.api(desired).logs(sid)
        progress = track_text(text, **tracker_settings(desired.job))
        metrics = status_metrics(progress, elapsed_s=job_elapsed(job),
                                 ended=phase in (Phase.SUCCEEDED, Phase.FAILED))
        message = f"job {sid} {raw}"
        if job.get("message"):
            message += f": {job['message']}"
        platform = {"exists": True, **_brief(job), "address": self.api(desired).address,
                    "start_time": job.get("start_time"), "end_time": job.get("end_time"),
                    "entrypoint": job.get("entrypoint"), "log_tail": tail_lines(text, 20)}
        nodes = node_states(text)
        if nodes:
            platform["nodes"] = nodes
        why: dict[str, Any] = {}
        if phase is Phase.FAILED:
            error = ": ".join(str(job[k]) for k in ("error_type", "message") if job.get(k))
            code = job.get("driver_exit_code")
            why = reason(exit_code=code if isinstance(code, int) else None,
                         log=clean_lines(text),
                         platform_reason=error or None)
        elif phase is Phase.SUCCEEDED:
            why = short_of_plan(text, progress, _summary(job))
        return [Status(addr, phase, message, platform=platform, metrics=metrics,
                       outputs=self._outputs(desired, job), reason=why)]

    def measured(self, desired: Desired, reporter: Reporter | None = None) -> dict[str, Any]:
        """The ended job's measured properties (``reconciler.measured``), from its log: the
        trainer's runtime and token count (TRL's ``num_tokens``; a torchtune job's dataset
        lies on the cluster, so its tokens are not counted here), the CUDA peak the
        launcher logged, validity. One read of the log: nothing long to tell ``reporter``."""
        job = self._current(desired)
        phase = PHASES.get(str((job or {}).get("status")))
        if job is None or phase not in (Phase.SUCCEEDED, Phase.FAILED):
            return {}
        text = self.api(desired).logs(str(job["submission_id"]))
        tracker = track_text(text, **tracker_settings(desired.job))
        why = short_of_plan(text, tracker, _summary(job)) if phase is Phase.SUCCEEDED \
            else reason(log=clean_lines(text))
        validity = why.get("validity") or ("ok" if phase is Phase.SUCCEEDED else "failed")
        out = measure(text, tracker, validity=validity, devices=desired.job.world_size,
                      global_batch=desired.job.global_batch_size)
        if validity == "invalid" and why.get("trained"):
            out["validity_reason"] = describe(why)
        return out

    def _outputs(self, desired: Desired, job: dict[str, Any]) -> dict[str, Any]:
        """Where the job writes; its files too when the cluster is this machine (a head on
        loopback) and the path is absolute (a relative one is the job's working dir's)."""
        where = location(desired.job)
        host = urlparse(self.api(desired).address).hostname or ""
        folder = Path(where["path"])
        if host in ("127.0.0.1", "localhost", "::1") and folder.is_absolute():
            start = job.get("start_time")
            where.update(scan(folder, since=start / 1000 if start else None))
        return where

    def wait(self, desired: Desired, reporter: Reporter, timeout_s: float | None = None
             ) -> Status:
        seen = LogFollowerText()

        def look() -> Observed:
            job = self._current(desired)
            if job is None:
                raise BackendError(f"no Ray job of {desired.spec_file}",
                                   hint="run `ftspec apply` first")
            text = self.api(desired).logs(str(job["submission_id"]))
            return Observed(PHASES.get(str(job.get("status")), Phase.UNKNOWN),
                            seen.new_lines(text), elapsed_s=job_elapsed(job))

        return wait_until_done(look, lambda: self.status(desired)[0],
                               tracker=tracker_for(desired.job), reporter=reporter,
                               address=address(desired.job.spec_id), timeout_s=timeout_s)

    def logs(self, desired: Desired, *, follow: bool = False, tail: int | None = None,
             selector: str | None = None) -> Iterator[str]:
        refuse_selector(selector, "a Ray job")
        job = self._current(desired)
        if job is None:
            raise BackendError(f"no Ray job of {desired.spec_file}",
                               hint="run `ftspec apply` first")
        sid, api = str(job["submission_id"]), self.api(desired)
        yield from one_log(TextLog(lambda: api.logs(sid)),
                           lambda: (api.get_job(sid) or {}).get("status") in TERMINAL,
                           follow=follow, tail=tail, pause_s=1.0)


def job_elapsed(job: dict[str, Any]) -> float | None:
    """Seconds since the job started, to its end once it ended (Ray counts milliseconds)."""
    start, end = job.get("start_time"), job.get("end_time")
    if not isinstance(start, (int, float)) or isinstance(start, bool) or not start:
        return None
    stop = end if isinstance(end, (int, float)) and end else time.time() * 1000
    return (stop - start) / 1000


def make_backend(options: object = None) -> RayBackend:
    """Factory used by ``ftspec.reconciler.backends``."""
    return RayBackend(getattr(options, "ray_address", None))

CHECKED: tuple[type[Backend], type[Preflighter], type[Measurer]] = (
    RayBackend, RayBackend, RayBackend)
"""The Backend protocol and the capabilities RayBackend offers
(``reconciler.backend.CAPABILITIES``), checked by mypy --strict here."""


def _summary(job: dict[str, Any]) -> dict[str, str]:
    """The ML summary a Ray job was submitted with (its metadata's applied record)."""
    meta = job.get("metadata")
    return applied_summary(meta if isinstance(meta, dict) else {}, SUMMARY_ANNOTATION)
