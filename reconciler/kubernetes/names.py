"""At plan: the TrainJob name limit of a runtime only the cluster knows.

``validate`` checks the names on runtimes it knows (ftspec's generated runtime, the upstream
ones: ``targets.kube_names``); a spec naming another (Cluster)TrainingRuntime is checked here,
against the runtime read from the cluster, with the same rule (``limit_from_jobs``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ftspec.reconciler.backend import Desired
from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.resources import resource_of
from ftspec.reconciler.kubernetes.transport import Transport
from ftspec.spec.diagnostics import Diagnostic
from ftspec.targets.kube_names import (
    jobs_of_runtime,
    limit_from_jobs,
    name_diagnostic,
)


def read_runtime(t: Transport, kind: str, name: str, namespace: str
                 ) -> dict[str, Any] | None:
    """The runtime, or None when it is missing or the user may not read it (the plan's
    preflight reports a missing one at ``deploy.kubeflow.runtime``)."""
    res = resource_of(kind)
    try:
        return t.request("GET", res.path(namespace, name), verb="get",
                         what=f"{kind} {name}", ok_404=True)
    except ApiError as exc:
        if exc.status == 403:
            return None
        raise


def name_check(t: Transport, desired: Desired, seen: dict[str, dict[str, Any] | None]
               ) -> list[Diagnostic]:
    """The error at ``metadata.name`` when the TrainJob's name is too long for the runtime
    it references and only the cluster knows that runtime; ``seen``: runtimes read by this
    plan (path -> object), shared by its specs."""
    job = desired.job
    if job.cluster_runtime is None:
        return []
    kind, name = job.cluster_runtime
    path = resource_of(kind).path(job.namespace, name)
    if path not in seen:
        seen[path] = read_runtime(t, kind, name, job.namespace)
    runtime = seen[path]
    if runtime is None:
        return []
    limit = limit_from_jobs(jobs_of_runtime(runtime, job.nodes), f"{kind} {name}")
    diag = name_diagnostic(job.name, limit, "kubeflow.name-length")
    if diag is None:
        return []
    span = desired.doc.span_of(diag.path) if desired.doc is not None else None
    return [replace(diag, span=span)]
