"""Platform status -> the common ``Phase`` (pure functions over the live object)."""

from __future__ import annotations

from typing import Any

from ftspec.reconciler.model import Phase


def _true(conditions: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind
                 and str(c.get("status")) == "True"), None)


def trainjob_phase(obj: dict[str, Any]) -> tuple[Phase, str, dict[str, Any]]:
    status = obj.get("status") or {}
    conditions = status.get("conditions") or []
    platform = {"conditions": conditions, "jobsStatus": status.get("jobsStatus") or []}
    if status.get("trainerStatus"):
        platform["trainerStatus"] = status["trainerStatus"]
    for kind, phase in (("Failed", Phase.FAILED), ("Complete", Phase.SUCCEEDED)):
        cond = _true(conditions, kind)
        if cond:
            return phase, str(cond.get("message") or cond.get("reason") or kind), platform
    if _true(conditions, "Suspended"):
        return Phase.PENDING, "suspended (waiting for admission)", platform
    jobs = platform["jobsStatus"]
    node = [j for j in jobs if j.get("name") == "node"]
    if any((j.get("active") or 0) > 0 or (j.get("ready") or 0) > 0 for j in node):
        return Phase.RUNNING, "trainer nodes active", platform
    if any((j.get("active") or 0) > 0 for j in jobs):
        return Phase.RUNNING, "initializers running", platform
    return Phase.PENDING, "created; no trainer pods active yet", platform


def rayjob_phase(obj: dict[str, Any]) -> tuple[Phase, str, dict[str, Any]]:
    status = obj.get("status") or {}
    deploy = status.get("jobDeploymentStatus") or ""
    job = status.get("jobStatus") or ""
    platform = {k: status.get(k) for k in ("jobDeploymentStatus", "jobStatus", "reason",
                                           "message", "rayClusterName", "jobId")
                if status.get(k) is not None}
    message = str(status.get("message") or status.get("reason") or deploy or "created")
    if deploy in ("Failed", "ValidationFailed") or job in ("FAILED", "STOPPED"):
        return Phase.FAILED, message, platform
    if deploy == "Complete" and job == "SUCCEEDED" or job == "SUCCEEDED":
        return Phase.SUCCEEDED, "job succeeded", platform
    if deploy == "Running" or job == "RUNNING":
        return Phase.RUNNING, "job running", platform
    if deploy in ("", "Initializing", "Suspended", "Suspending", "Waiting", "Retrying") \
            or job in ("", "PENDING"):
        return Phase.PENDING, message, platform
    return Phase.UNKNOWN, message, platform


def phase_of(obj: dict[str, Any]) -> tuple[Phase, str, dict[str, Any]]:
    if obj.get("kind") == "TrainJob":
        return trainjob_phase(obj)
    if obj.get("kind") == "RayJob":
        return rayjob_phase(obj)
    return Phase.UNKNOWN, f"no status mapping for {obj.get('kind')}", {}


TERMINAL = (Phase.SUCCEEDED, Phase.FAILED)
