"""``ftspec list``: the runs ftspec knows of, read from records and live objects, not specs.

- local: every ``RunRecord`` of this working directory's ``.ftspec/`` (a run whose spec file
  was deleted or renamed still shows, marked so);
- Ray: the jobs of a Ray cluster that ftspec submitted (their ``metadata`` owner label);
- Kubernetes: the TrainJobs and RayJobs of a namespace labelled
  ``app.kubernetes.io/managed-by=ftspec``.

Each is one ``RunRow``; the CLI renders the table and ``--json`` from the same rows.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from ftspec.spec.ownership import OWNER_SELECTOR, SPEC_ID_LABEL, owned_spec_id


@dataclass(frozen=True)
class RunRow:
    name: str
    """The spec id (``metadata.id`` or the name)."""
    target: str
    phase: str
    where: str
    """``local``, ``ray <address>``, ``<namespace>`` of a Kubernetes job."""
    step: int | None = None
    total_steps: int | None = None
    seconds_left: float | None = None
    """The time left (``pace.Progress``, as ``status`` says it); None where unknown."""
    loss: float | None = None
    started_at: float | None = None
    """Epoch seconds."""
    output: str | None = None
    spec_file: str | None = None
    spec_exists: bool | None = None
    """Whether the spec file is still there (local runs; None where unknown)."""
    validity: str | None = None
    """ok / invalid / failed once ended (``failure``); None while it runs."""
    job: str | None = None
    """The platform's name for it (Ray submission id, Kubernetes object name)."""
    progress_note: str | None = None
    """Why step / loss are not known (Kubernetes rows: the pod log could not be read…)."""
    warning: str | None = None
    """A pending or failed Kubernetes job's latest Warning Event (its own or its
    children's): why it does not start."""

    def age_s(self, now: float | None = None) -> float | None:
        if self.started_at is None:
            return None
        return max(0.0, (time.time() if now is None else now) - self.started_at)

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        from ftspec.reconciler.pace import Progress

        out = asdict(self)
        out["percent"] = Progress(self.step, self.total_steps).percent
        if isinstance(self.loss, float) and not math.isfinite(self.loss):
            out["loss"] = None  # a diverged run's nan: JSON has no such number
        age = self.age_s(now)
        out["age_s"] = None if age is None else round(age, 1)
        return out


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def local_rows(root: Path) -> list[RunRow]:
    """The runs recorded under ``root/.ftspec`` (records validated by ``StateStore``)."""
    from ftspec.reconciler.local.observe import observe
    from ftspec.reconciler.local.state import StateStore

    store = StateStore(root)
    rows = []
    for record in store.all():
        total = _int(record.summary.get("max steps"))
        view = observe(record, store.root, settings={"total_steps": total})
        last = view.progress.last
        spec = store.root / record.spec_file
        rows.append(RunRow(
            name=record.spec_id, target="local", phase=view.phase.value, where="local",
            step=last.step if last else None, total_steps=view.progress.planned_total(),
            seconds_left=view.metrics().get("seconds_left"),
            loss=last.loss if last else None, started_at=record.started_at,
            output=_local_output(store.root, record.run_dir, record.argv),
            spec_file=record.spec_file,
            spec_exists=spec.is_file(), validity=_validity(view.phase.value, view.reason),
            job=f"pid {record.supervisor_pid}"))
    return rows


def _validity(phase: str, reason: dict[str, Any]) -> str | None:
    if phase == "Succeeded":  # invalid when it trained fewer steps than planned
        return str(reason.get("validity") or "ok")
    if phase == "Failed":
        return str(reason.get("validity") or "failed")
    return None


_OUTPUT_DIR = re.compile(r"^output_dir:\s*['\"]?([^'\"\s#]+)", re.MULTILINE)


def _local_output(root: Path, run_dir: str, argv: list[str]) -> str | None:
    """Where the run writes, as its launcher was told: ``--output_dir`` (accelerate / TRL)
    or the torchtune config's ``output_dir``; else the run folder."""
    for flag, value in pairwise(argv):
        if flag == "--output_dir":
            return value
    from ftspec.reconciler.local.runner import launch_file

    launch = root / run_dir / "launch"
    for name in sorted(p.name for p in launch.glob("*.yaml")) if launch.is_dir() else []:
        text = launch_file(root, run_dir, name)  # a plain file only: a FIFO would block
        found = _OUTPUT_DIR.search(text) if text is not None else None
        if found:
            return found.group(1)
    return run_dir


def ray_rows(address: str) -> list[RunRow]:
    """The newest job of each ftspec spec on the Ray cluster at ``address``."""
    from ftspec.compiler.summary import SUMMARY_ANNOTATION
    from ftspec.reconciler.applied import applied_summary
    from ftspec.reconciler.measured import short_of_plan
    from ftspec.reconciler.model import Phase
    from ftspec.reconciler.progress import track_text
    from ftspec.reconciler.ray.backend import PHASES, SPEC_FILE_KEY, job_elapsed
    from ftspec.reconciler.ray.jobsapi import JobsApi

    api = JobsApi(address)
    newest: dict[str, dict[str, Any]] = {}
    for job in api.list_jobs():
        meta = job.get("metadata") or {}
        sid = owned_spec_id(meta)
        if sid is None:
            continue
        if sid not in newest or (job.get("start_time") or 0) > (
                newest[sid].get("start_time") or 0):
            newest[sid] = job
    rows = []
    for sid, job in sorted(newest.items()):
        meta = job.get("metadata") or {}
        phase = PHASES.get(str(job.get("status")))
        text = api.logs(str(job["submission_id"]))
        summary = applied_summary(meta, SUMMARY_ANNOTATION)
        total = _int(summary.get("max steps"))
        tracker = track_text(text, total_steps=total)
        last = tracker.last
        start = job.get("start_time")
        ended = phase in (Phase.SUCCEEDED, Phase.FAILED)
        short = short_of_plan(text, tracker, summary) if phase is Phase.SUCCEEDED else {}
        rows.append(RunRow(
            name=sid, target="ray", phase=phase.value if phase else "Unknown",
            where=f"ray {address}", step=last.step if last else None,
            total_steps=tracker.planned_total(),
            seconds_left=tracker.progress(elapsed_s=job_elapsed(job), ended=ended).seconds_left,
            loss=last.loss if last else None,
            started_at=start / 1000 if isinstance(start, (int, float)) else None,
            spec_file=meta.get(SPEC_FILE_KEY),
            validity=short.get("validity") or {
                "SUCCEEDED": "ok", "FAILED": "failed", "STOPPED": "failed"}.get(
                str(job.get("status"))),
            job=str(job.get("submission_id"))))
    return rows


def kube_rows(transport: Any, namespace: str) -> list[RunRow]:
    """ftspec's TrainJobs and RayJobs in ``namespace`` (a kind whose CRD is not installed
    is skipped); step / loss from the end of the trainer pod's log (``kubernetes.measure``)."""
    from ftspec.reconciler.kubernetes.errors import ApiError
    from ftspec.reconciler.kubernetes.measure import progress
    from ftspec.reconciler.kubernetes.observe import times
    from ftspec.reconciler.kubernetes.resources import JOB_KIND, KINDS
    from ftspec.reconciler.kubernetes.status import phase_of

    rows = []
    for target, kind in JOB_KIND.items():
        try:
            found = transport.request(
                "GET", KINDS[kind].path(namespace),
                query={"labelSelector": OWNER_SELECTOR}, verb="list",
                what=f"{kind}s in namespace {namespace}", ok_404=True) or {}
        except ApiError as exc:
            if exc.status in (403, 404):
                continue
            raise
        for obj in found.get("items") or []:
            meta = obj.get("metadata") or {}
            obj.setdefault("kind", kind)
            phase, _message, _ = phase_of(obj)
            start, _end = times(obj)
            labels = meta.get("labels") or {}
            seen = progress(transport, obj)
            warning = _warning(transport, obj) if phase.value in ("Pending", "Failed") \
                else None
            rows.append(RunRow(
                name=str(labels.get(SPEC_ID_LABEL) or meta.get("name")), target=target,
                phase=phase.value, where=namespace, started_at=start, step=seen.step,
                total_steps=seen.total_steps, seconds_left=seen.seconds_left, loss=seen.loss,
                progress_note=seen.note,
                spec_file=(meta.get("annotations") or {}).get("ftspec.dev/spec-file"),
                validity={"Succeeded": "ok", "Failed": "failed"}.get(phase.value),
                job=f"{kind}/{meta.get('name')}", warning=warning))
    return sorted(rows, key=lambda r: (r.name, r.job or ""))


def _warning(transport: Any, obj: dict[str, Any]) -> str | None:
    """The latest Warning Event of a job and its children (``kubernetes.events``)."""
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.kubernetes.events import describe_warning, job_names, warning_events
    from ftspec.reconciler.kubernetes.logs import job_pods

    try:
        found = warning_events(transport, obj, job_pods(transport, obj),
                               job_names(transport, obj))
    except BackendError:
        return None
    return describe_warning(found[-1]) if found else None

