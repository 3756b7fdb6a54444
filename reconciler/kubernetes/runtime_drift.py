"""Runtime drift: the training runtime a live TrainJob was started from has changed since.

The Kubeflow Trainer renders a TrainJob's JobSet once, from the TrainJob and its runtime, and
does not render it again while the TrainJob runs (it skips the build when a JobSet of that name
exists and neither is suspended). So when someone edits the ClusterTrainingRuntime (a new
trainer image, another torchtune version, other resources), the live job keeps what it started
with, and the next TrainJob made from the same spec gets the new runtime: the same spec would
train with other code. No peer tool says so; the plan does, in the terms a user reads.

The comparison is between the live JobSet (what the Trainer rendered at the start) and the
runtime's replicated jobs now, restricted to what the TrainJob does not set itself: the trainer
container's image, command and arguments when the TrainJob leaves them to the runtime, every
other container's image, command and arguments, the environment entries the runtime sets and
the TrainJob does not override (the Trainer's own ``PET_*`` / ``STORAGE_URI`` aside), and the
resource limits the TrainJob's ``resourcesPerNode`` does not name. Pure functions over dicts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ftspec.reconciler.backend import BackendError

TRAINER_CONTAINER = "node"
"""The container the TrainJob's ``spec.trainer`` applies to (in the trainer replicated job)."""
INJECTED_ENV_PREFIXES = ("PET_", "STORAGE_URI", "JOB_COMPLETION_INDEX")


@dataclass(frozen=True)
class RuntimeDrift:
    """One difference between the running job's rendering and its runtime now."""

    replicated_job: str
    container: str
    what: str
    started_with: str
    runtime_now: str

    def line(self) -> str:
        return f"{self.replicated_job}/{self.container} {self.what}: {self.started_with} -> {self.runtime_now}"


def _containers(replicated_job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    pod = (((replicated_job.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
    return {str(c.get("name")): c for c in (pod.get("containers") or []) + (pod.get("initContainers") or [])}


def _replicated_jobs(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(r.get("name")): r for r in spec.get("replicatedJobs") or []}


def _words(value: Any) -> str:
    return " ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {str(e.get("name")): e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def _limits(container: dict[str, Any]) -> dict[str, str]:
    resources = container.get("resources") or {}
    return {str(k): str(v) for k, v in (resources.get("limits") or resources.get("requests") or {}).items()}


def _container_drift(
    job: str, name: str, rendered: dict[str, Any], now: dict[str, Any], trainer: dict[str, Any] | None
) -> Iterator[RuntimeDrift]:
    """``trainer``: the TrainJob's ``spec.trainer`` when ``name`` is the container it applies to."""
    overrides = trainer or {}
    for key in ("image", "command", "args"):
        if key in overrides or key not in now:
            continue
        if _words(rendered.get(key)) != _words(now.get(key)):
            yield RuntimeDrift(job, name, key, _words(rendered.get(key, "-")), _words(now[key]))
    set_by_job = {str(e.get("name")) for e in overrides.get("env") or []}
    rendered_env = _env(rendered)
    for var, value in _env(now).items():
        if var in set_by_job or var.startswith(INJECTED_ENV_PREFIXES):
            continue
        if rendered_env.get(var) != value:
            yield RuntimeDrift(job, name, f"env {var}", str(rendered_env.get(var, "unset")), str(value))
    named = set((overrides.get("resourcesPerNode") or {}).get("limits") or {})
    named |= set((overrides.get("resourcesPerNode") or {}).get("requests") or {})
    rendered_limits = _limits(rendered)
    for resource, amount in _limits(now).items():
        if resource in named:
            continue
        if rendered_limits.get(resource) != amount:
            yield RuntimeDrift(job, name, f"{resource} limit", rendered_limits.get(resource, "none"), amount)


def runtime_drift(trainjob: dict[str, Any], jobset: dict[str, Any], runtime: dict[str, Any]) -> list[RuntimeDrift]:
    """What the runtime would give this TrainJob now that its running JobSet did not get."""
    trainer = (trainjob.get("spec") or {}).get("trainer") or {}
    rendered_jobs = _replicated_jobs(jobset.get("spec") or {})
    runtime_jobs = _replicated_jobs((((runtime.get("spec") or {}).get("template") or {}).get("spec")) or {})
    found: list[RuntimeDrift] = []
    for job, now_job in runtime_jobs.items():
        rendered_job = rendered_jobs.get(job)
        if rendered_job is None:
            found.append(RuntimeDrift(job, "-", "replicated job", "absent", "added"))
            continue
        rendered_containers = _containers(rendered_job)
        for name, now in _containers(now_job).items():
            rendered = rendered_containers.get(name)
            if rendered is None:
                found.append(RuntimeDrift(job, name, "container", "absent", "added"))
                continue
            found.extend(_container_drift(job, name, rendered, now, trainer if name == TRAINER_CONTAINER else None))
    for job in rendered_jobs.keys() - runtime_jobs.keys():
        found.append(RuntimeDrift(job, "-", "replicated job", "present", "removed"))
    return found


def drift_warning(trainjob: dict[str, Any], runtime: dict[str, Any], drift: list[RuntimeDrift]) -> str:
    """The plan's line for a drifted runtime."""
    meta = trainjob.get("metadata") or {}
    ref = ((trainjob.get("spec") or {}).get("runtimeRef")) or {}
    kind = ref.get("kind") or runtime.get("kind") or "ClusterTrainingRuntime"
    changes = "; ".join(d.line() for d in drift)
    return (
        f"runtime drift: {kind} {ref.get('name')} changed since TrainJob {meta.get('namespace')}/{meta.get('name')} "
        f"started ({changes}). The running job keeps what it started with; a new run of this spec "
        f"(any change that replaces the TrainJob, or destroy and apply) trains with the runtime as it is now"
    )


class _Getter(Protocol):
    def get(self, obj: dict[str, Any]) -> dict[str, Any] | None: ...


def live_runtime_drift(reader: _Getter, live: dict[str, Any]) -> str | None:
    """The plan's warning for a live TrainJob whose runtime changed since it started, or None
    (no JobSet yet, the runtime gone, or nothing changed)."""
    if live.get("kind") != "TrainJob":
        return None
    meta = live.get("metadata") or {}
    ref = (live.get("spec") or {}).get("runtimeRef") or {}
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    runtime_meta = {"name": ref.get("name")} if kind == "ClusterTrainingRuntime" else \
        {"name": ref.get("name"), "namespace": meta.get("namespace")}
    try:
        return _drift_of(reader, live, kind, runtime_meta)
    except BackendError:  # no JobSet API (no Trainer installed), no access: nothing to compare
        return None


def _drift_of(reader: _Getter, live: dict[str, Any], kind: str, runtime_meta: dict[str, Any]) -> str | None:
    meta = live.get("metadata") or {}
    jobset = reader.get({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                         "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")}})
    owners = {o.get("uid") for o in ((jobset or {}).get("metadata") or {}).get("ownerReferences") or []}
    if jobset is None or meta.get("uid") not in owners:
        return None
    runtime = reader.get({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": runtime_meta})
    if runtime is None:
        return None
    found = runtime_drift(live, jobset, runtime)
    return drift_warning(live, runtime, found) if found else None
