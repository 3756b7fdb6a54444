"""Plan-time preflight of a Ray job: can the cluster place what the spec asks for?

Read from the dashboard's HTTP API (``JobsApi.nodes``: ``/api/v0/nodes?detail=1``, and
``JobsApi.cluster_status`` for the autoscaler), never through ``import ray``. A job that no
alive node can hold (its GPUs, CPUs or custom resources such as ``accelerator_type:*`` or
RoCE), or a multi-node run (one STRICT_SPREAD bundle per node) that needs more fitting nodes
than the cluster has, is an error at the spec field that asks for it. Totals are compared,
not what is free now: a busy cluster makes a job wait, not fail. On a cluster with an
autoscaler the same findings are warnings (it may start a node that fits). The fit logic is
our own: Ray has no public "would this fit" call short of submitting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ftspec.reconciler.backend import Desired
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity
from ftspec.spec.ir import Job


@dataclass(frozen=True)
class Cluster:
    """What the head reported: each alive node's total resources, and its autoscaler."""

    nodes: tuple[dict[str, float], ...]
    autoscaler: str | None = None
    """A description of the autoscaler (node types it can start), None without one."""


def cluster_of(nodes_payload: Any, status_payload: Any) -> Cluster:
    """``Cluster`` from ``/api/v0/nodes?detail=1`` and ``/api/cluster_status?format=0``
    payloads (validated: anything malformed is ``ValueError``)."""
    try:
        rows = nodes_payload["data"]["result"]["result"]
        rows = list(rows) if isinstance(rows, list) else None
    except (KeyError, TypeError):
        rows = None
    if rows is None:
        raise ValueError("the nodes answer has no data.result.result list")
    nodes: list[dict[str, float]] = []
    for row in rows:
        if not isinstance(row, dict) or row.get("state") != "ALIVE":
            continue
        total = row.get("resources_total")
        if not isinstance(total, dict):
            continue
        nodes.append({str(k): float(v) for k, v in total.items()
                      if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return Cluster(tuple(nodes), _autoscaler(status_payload))


def _autoscaler(payload: Any) -> str | None:
    """The worker node types the autoscaler can start, from its status text
    (``autoscalingStatus``, after ``Worker node types:``), None where it lists none. A
    plain head's monitor reports too, with that list empty; ``loadMetricsReport.nodeTypes``
    is no sign either (the shapes of the nodes the cluster has)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    text = data.get("autoscalingStatus") if isinstance(data, dict) else None
    if not isinstance(text, str) or "Worker node types:" not in text:
        return None
    listed = [line.strip(" -\t") for line in text.split("Worker node types:", 1)[1].splitlines()]
    types = [line for line in listed if line]
    if not types:
        return None
    return "an autoscaler with worker node types " + "; ".join(types)[:200]


def needs(job: Job, payload: Mapping[str, Any]) -> tuple[int, dict[str, float]]:
    """(nodes, resources one node must hold) of the submission ``payload`` of ``job``."""
    if job.nodes > 1:
        from ftspec.targets.ray_nodes import bundle

        return job.nodes, {k: v for k, v in bundle(job).items() if v > 0}
    one: dict[str, float] = {}
    for key, name in (("entrypoint_num_gpus", "GPU"), ("entrypoint_num_cpus", "CPU")):
        value = payload.get(key)
        if isinstance(value, (int, float)) and value > 0:
            one[name] = float(value)
    extra = payload.get("entrypoint_resources") or {}
    one.update({str(k): float(v) for k, v in extra.items() if float(v) > 0})
    return 1, one


def field_of(job: Job, resource: str) -> KeyPath:
    """The spec field that makes a node ask for ``resource``."""
    spec = job.spec
    ray_nodes = spec.deploy.ray_nodes
    if resource == "GPU":
        return ("resources", "gpus_per_node" if spec.resources.gpus_per_node is not None
                else "gpus")
    if resource == "CPU":
        if job.nodes == 1:
            return ("deploy", "ray", "entrypoint_num_cpus")
        return ("deploy", "ray_nodes", "cpus") if ray_nodes.cpus is not None \
            else ("resources", "cpu")
    if resource in ray_nodes.extra_resources:
        return ("deploy", "ray_nodes", "extra_resources", resource)
    if resource == ray_nodes.whole_node_resource:
        return ("deploy", "ray_nodes", "whole_node_resource")
    if ray_nodes.roce.enabled and resource == ray_nodes.roce.resource:
        return ("deploy", "ray_nodes", "roce", "enabled")
    if ray_nodes.gpu_resource is not None:
        return ("deploy", "ray_nodes", "gpu_resource")
    return ("resources", "accelerator")


def _num(value: float) -> str:
    return f"{value:g}"


def _fits(node: Mapping[str, float], want: Mapping[str, float]) -> bool:
    return all(node.get(k, 0.0) >= v for k, v in want.items())


def check(desired: Desired, payload: Mapping[str, Any], cluster: Cluster) -> list[Diagnostic]:
    """Each way ``cluster`` cannot place ``desired``'s job (empty: it fits)."""
    job = desired.job
    count, want = needs(job, payload)
    doc = desired.doc
    severity = Severity.WARNING if cluster.autoscaler else Severity.ERROR
    assumed = (f"the cluster has {cluster.autoscaler}: assumed it can start a node that "
               "fits; the job waits until one does") if cluster.autoscaler else None
    found: list[Diagnostic] = []

    def report(path: KeyPath, summary: str, code: str, hint: str) -> None:
        found.append(Diagnostic(severity, summary, path=path,
                                span=doc.span_of(path) if doc is not None else None,
                                hint=assumed or hint, code=f"preflight.ray-{code}"))

    if not cluster.nodes:
        return [Diagnostic(Severity.WARNING, "the Ray cluster reports no alive node; its "
                           "resources were not checked", code="preflight.ray-no-nodes")]
    per = "per node" if count > 1 else ""
    for resource, amount in want.items():
        have = sorted({node.get(resource, 0.0) for node in cluster.nodes})
        if have[-1] >= amount:
            continue
        report(field_of(job, resource),
               f"the cluster's nodes have {resource} {', '.join(map(_num, have))}; "
               f"the job needs {_num(amount)}{' ' + per if per else ''}", "resource",
               "ask for what one node of the cluster has, or add nodes that have it")
    if found:
        return found
    fitting = sum(1 for node in cluster.nodes if _fits(node, want))
    asked = ", ".join(f"{k} {_num(v)}" for k, v in want.items())
    if fitting == 0:
        report(field_of(job, next(iter(want))),
               f"no node of the cluster has all of {asked} at once", "resource",
               "each resource exists, on different nodes; ask for what one node has")
    elif fitting < count:
        report(("resources", "nodes"),
               f"{fitting} of the cluster's {len(cluster.nodes)} alive node(s) can hold a node "
               f"of this run ({asked}); the job needs {count}, one per node (STRICT_SPREAD)",
               "nodes", "lower resources.nodes, or add nodes to the cluster")
    return found
