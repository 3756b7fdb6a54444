"""The Warning Events of a job and of what its controller made for it: why it does not start.

A controller that cannot make a job's children often says so only in an Event: the Trainer
records ``TrainJobResourcesCreationFailed`` on the TrainJob when JobSet's webhook refuses the
JobSet (a name too long for its pods), and sets no condition; the Job controller records
``FailedCreate`` on a Job, the scheduler ``FailedScheduling`` on a Pod. ``status``, ``status
--wait``, ``list`` and the failure reason read them here.

Reads use the core v1 Events API with a field selector on ``involvedObject`` and
``type=Warning`` (Events written through ``events.k8s.io/v1`` read back there too, their
``regarding`` as ``involvedObject`` and ``note`` as ``message``): one request per named
object (the job, its JobSet or submitter Job) and one per kind for its Jobs and Pods,
filtered to the job's own by name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.resources import KINDS
from ftspec.reconciler.kubernetes.transport import Transport

KEEP = 5
"""Warnings kept per job (the latest ones)."""


def _named(live: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, name) of the job and of the children named after it."""
    meta = live.get("metadata") or {}
    name = str(meta.get("name"))
    kind = str(live.get("kind"))
    if kind == "TrainJob":
        return [(kind, name), ("JobSet", name)]
    if kind == "RayJob":
        named = [(kind, name), ("Job", name)]
        cluster = (live.get("status") or {}).get("rayClusterName")
        return named + ([("RayCluster", str(cluster))] if cluster else [])
    return [(kind, name)]


def _query(t: Transport, ns: str, selector: str) -> list[dict[str, Any]]:
    try:
        out = t.request("GET", KINDS["Event"].path(ns),
                        query={"fieldSelector": selector}, verb="list",
                        what=f"events in namespace {ns}", ok_404=True) or {}
    except ApiError as exc:
        if exc.status == 403:  # not allowed to read events: status shows what it can
            return []
        raise
    return list(out.get("items") or [])


def _when(event: dict[str, Any]) -> str:
    series = event.get("series") or {}
    return str(series.get("lastObservedTime") or event.get("lastTimestamp")
               or event.get("eventTime") or (event.get("metadata") or {})
               .get("creationTimestamp") or "")


def job_names(t: Transport, live: dict[str, Any]) -> list[str]:
    """The Jobs a TrainJob's JobSet made (by JobSet's label); none for other kinds or while
    they cannot be read."""
    if live.get("kind") != "TrainJob":
        return []
    meta = live.get("metadata") or {}
    try:
        out = t.request("GET", KINDS["Job"].path(meta.get("namespace")),
                        query={"labelSelector": f"jobset.sigs.k8s.io/jobset-name="
                               f"{meta.get('name')}"}, verb="list", what="jobs",
                        ok_404=True) or {}
    except ApiError as exc:
        if exc.status == 403:
            return []
        raise
    return [str((j.get("metadata") or {}).get("name")) for j in out.get("items") or []]


def warning_events(t: Transport, live: dict[str, Any], pods: Iterable[str] = (),
                   jobs: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The latest Warning Events of ``live``, of the children named after it, and of its
    ``jobs`` and ``pods`` (by name), oldest first: object, reason, message, count, last."""
    ns = str((live.get("metadata") or {}).get("namespace"))
    found: list[dict[str, Any]] = []
    for kind, name in _named(live):
        found += _query(t, ns, f"involvedObject.kind={kind},involvedObject.name={name},"
                        "type=Warning")
    for kind, names in (("Job", set(jobs)), ("Pod", set(pods))):
        if names:
            found += [e for e in _query(t, ns, f"involvedObject.kind={kind},type=Warning")
                      if (e.get("involvedObject") or {}).get("name") in names]
    rows = []
    for event in sorted(found, key=_when):
        obj = event.get("involvedObject") or {}
        rows.append({"object": f"{obj.get('kind')} {obj.get('name')}",
                     "reason": event.get("reason") or "",
                     "message": event.get("message") or event.get("note") or "",
                     "count": (event.get("series") or {}).get("count") or event.get("count")
                     or 1, "last": _when(event)})
    return rows[-KEEP:]


def describe_warning(row: dict[str, Any]) -> str:
    """One warning as a line: ``Warning <reason> on <object>: <message>``."""
    count = f" (x{row['count']})" if isinstance(row.get("count"), int) and row["count"] > 1 \
        else ""
    return f"Warning {row['reason']} on {row['object']}{count}: {row['message']}"
