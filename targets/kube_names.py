"""The longest name a TrainJob or RayJob may have, from what its controller derives from it.

One rule, called by ``validate`` (the kubeflow and kuberay targets' checks, sweep point names)
and by ``plan`` (a runtime read from the cluster): ``limit_from_jobs``.

- TrainJob: the Trainer creates a JobSet named like the TrainJob from the runtime's
  replicated jobs. JobSet's webhook (v0.12, ``pkg/webhooks/jobset_webhook.go``) refuses a
  JobSet whose longest pod name ``<name>-<replicatedJob>-<replicas-1>-<completions-1>-<5
  random>`` exceeds 63 characters (``placement.GenPodName`` plus 5; every replicated job is
  Indexed: JobSet defaults it, and the Trainer sets completions from the pod set count).
  The Trainer then only records a Warning Event: the TrainJob stays Pending for ever.
  Pods per replicated job: the trainer's (``trainer.kubeflow.org/trainjob-ancestor-step:
  trainer``, or ``node``) run ``numNodes`` pods (an upper bound for MPI runtimes, whose
  ``node`` job runs one fewer when the launcher is a node); the others their
  ``parallelism`` (default 1).
- RayJob: KubeRay names the RayCluster ``<name>-<5 random>`` and refuses RayCluster names
  over 53 characters (``utils.MaxRayJobNameLength`` = 47).

The replicated jobs of the upstream runtimes (Trainer v2.3.0 ``manifests/base/runtimes``)
are a table here so that ``validate`` knows their limit without a cluster; any other
runtime is read from the cluster at ``plan`` (``jobs_of_runtime``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.platforms import PLATFORMS

if TYPE_CHECKING:  # a warm plan reads the limit of a cached job without the spec model
    from ftspec.spec.model import FineTuneSpec

MAX_LABEL = 63
"""An RFC 1035 label (a pod name must be one)."""
POD_SUFFIX = 6
"""``-`` and the 5 random characters the Job controller appends to a pod's name."""
RAYJOB_MAX = 47
"""KubeRay: a RayCluster name has at most 53 characters and is ``<RayJob name>-<5 random>``."""
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


@dataclass(frozen=True)
class ReplicatedJob:
    """One replicated job of a runtime's JobSet template, as the name rule needs it."""

    name: str
    replicas: int = 1
    pods: int = 1
    """Completions of each of its Jobs (the highest pod index + 1)."""

    def pod_name(self, job_name: str) -> str:
        """JobSet's formula for the longest pod name, ``#####`` for the random suffix."""
        return f"{job_name}-{self.name}-{self.replicas - 1}-{self.pods - 1}-#####"

    @property
    def overhead(self) -> int:
        return len(self.pod_name(""))


@dataclass(frozen=True)
class NameLimit:
    """The longest job name and why (which replicated job and formula)."""

    limit: int
    reason: str


_TORCHTUNE = (("dataset-initializer", False), ("model-initializer", False), ("node", True))
UPSTREAM_RUNTIMES: dict[str, tuple[tuple[str, bool], ...]] = {
    "torchtune-llama3.2-1b": _TORCHTUNE,
    "torchtune-llama3.2-3b": _TORCHTUNE,
    "torchtune-qwen2.5-1.5b": _TORCHTUNE,
    "torch-distributed": (("node", True),),
    "torch-distributed-with-cache": (("dataset-initializer", False), ("node", True)),
    "deepspeed-distributed": (("node", True), ("launcher", True)),
    "mlx-distributed": (("node", True), ("launcher", True)),
    "jax-distributed": (("node", True),),
    "xgboost-distributed": (("node", True),),
}
"""ClusterTrainingRuntime name -> its replicated jobs (name, runs the trainer's nodes), as
Trainer v2.3.0 ships them (every one with ``replicas: 1`` and no ``parallelism``)."""


def limit_from_jobs(jobs: Sequence[ReplicatedJob], runtime: str) -> NameLimit:
    """The longest TrainJob name whose JobSet the JobSet webhook accepts."""
    if not jobs:
        return NameLimit(MAX_LABEL, "a name is an RFC 1035 label")
    worst = max(jobs, key=lambda j: j.overhead)
    return NameLimit(
        MAX_LABEL - worst.overhead,
        f"on runtime {runtime}, JobSet names the pods of replicated job {worst.name} "
        f"{worst.pod_name('<name>')} (##### random) and refuses pod names over "
        f"{MAX_LABEL} characters")


def upstream_jobs(runtime: str, nodes: int) -> list[ReplicatedJob] | None:
    """An upstream runtime's replicated jobs for a job of ``nodes`` nodes (None: not one)."""
    table = UPSTREAM_RUNTIMES.get(runtime)
    if table is None:
        return None
    return [ReplicatedJob(name, 1, nodes if trainer else 1) for name, trainer in table]


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else default


def jobs_of_runtime(runtime: Mapping[str, Any], nodes: int | None = None
                    ) -> list[ReplicatedJob]:
    """The replicated jobs of a (Cluster)TrainingRuntime object (read from a cluster or
    generated); ``nodes``: the TrainJob's ``numNodes`` (default: the runtime's)."""
    spec = runtime.get("spec") or {}
    default = _int(((spec.get("mlPolicy") or {}).get("numNodes")), 1)
    count = nodes or default
    found = []
    rjobs = (((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs")) or []
    for rjob in rjobs:
        if not isinstance(rjob, dict):
            continue
        template = rjob.get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        trainer = labels.get(ANCESTOR_LABEL) == "trainer" or rjob.get("name") == "node"
        parallel = _int((template.get("spec") or {}).get("parallelism"), 1)
        found.append(ReplicatedJob(str(rjob.get("name") or ""), _int(rjob.get("replicas"), 1),
                                   count if trainer else parallel))
    return found


def runtime_of(spec: FineTuneSpec) -> tuple[str, str, bool] | None:
    """(kind, name, generated) of the runtime a kubeflow spec's TrainJob references, or
    None when it references none (the target reports that)."""
    from ftspec.targets import get_launcher
    from ftspec.targets.kubeflow_torchtune import DEFAULT_RUNTIMES

    kf = spec.deploy.kubeflow
    on_runtime = get_launcher(spec.launcher).kubeflow_style == "torchtune-runtime"
    if not on_runtime and kf.generate_runtime:
        return "TrainingRuntime", f"{spec.metadata.name}-runtime", True
    if kf.runtime is not None:
        return kf.runtime.kind, kf.runtime.name, False
    default = DEFAULT_RUNTIMES.get(spec.model.family or "")
    if on_runtime and default:
        return "ClusterTrainingRuntime", default, False
    return None


def name_limit(spec: FineTuneSpec, target: str | None = None) -> NameLimit | None:
    """The longest job name ``target`` (default: the spec's ``deploy.target``) accepts,
    when known without a cluster: a RayJob's; a TrainJob's on ftspec's generated runtime
    or an upstream one. None: a runtime only the cluster knows (``plan`` reads it), none
    at all, or a target that runs no Kubernetes job (its platform row's ``name_rule``)."""
    rule = PLATFORMS[target or spec.deploy.target].name_rule
    if rule == "raycluster":
        return NameLimit(RAYJOB_MAX, "KubeRay names the RayCluster <name>-##### (##### "
                         "random) and refuses RayCluster names over 53 characters")
    if rule != "jobset":
        return None
    found = runtime_of(spec)
    if found is None:
        return None
    kind, name, generated = found
    nodes = spec.resources.nodes
    if generated:  # ftspec's own runtime: one replicated job, node
        return limit_from_jobs([ReplicatedJob("node", 1, nodes)], f"{name} (generated)")
    jobs = upstream_jobs(name, nodes) if kind == "ClusterTrainingRuntime" else None
    return None if jobs is None else limit_from_jobs(jobs, name)


def name_diagnostic(name: str, limit: NameLimit, code: str, what: str = "TrainJob"
                    ) -> Diagnostic | None:
    """The error at ``metadata.name`` when ``name`` is longer than ``limit`` allows."""
    if len(name) <= limit.limit:
        return None
    return Diagnostic(
        Severity.ERROR, f"a {what} name may have at most {limit.limit} characters here "
        f"(this one, {name!r}, has {len(name)}): {limit.reason}",
        path=("metadata", "name"), code=code,
        hint=f"shorten metadata.name to {limit.limit} characters or fewer")
