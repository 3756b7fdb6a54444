"""The longest TrainJob / RayJob name, from the replicated jobs of the runtime the spec uses
(JobSet's webhook refuses pod names over 63 characters; KubeRay's RayCluster names over 53)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from ftspec.compiler.build import point_id
from ftspec.compiler.pipeline import compile_spec
from ftspec.spec.loader import parse_yaml
from ftspec.spec.sweep import Point
from ftspec.spec.validate import validate_doc
from ftspec.targets.kube_names import (
    UPSTREAM_RUNTIMES,
    ReplicatedJob,
    jobs_of_runtime,
    limit_from_jobs,
    name_limit,
    upstream_jobs,
)
from helpers.jobs import spec_data
from helpers.upstream import upstream_root

ACCEL_GENERATED = {"launcher": "accelerate", "method": {"kind": "full"},
                   "deploy": {"kubeflow": {"generate_runtime": True},
                              "scheduling": {"image": "ghcr.io/example/ft:1"}}}


def _errors(change: dict[str, Any]) -> list[tuple[str | None, str]]:
    doc = parse_yaml(yaml.safe_dump(spec_data(**change)), "spec.yaml")
    compiled = compile_spec(doc, "checks")
    return [(d.code, d.summary) for d in compiled.errors if d.path == ("metadata", "name")]


@pytest.mark.parametrize(("runtime", "limit", "job"), [
    ("torchtune-llama3.2-1b", 33, "dataset-initializer"),
    ("torchtune-qwen2.5-1.5b", 33, "dataset-initializer"),
    ("deepspeed-distributed", 44, "launcher"),
    ("torch-distributed", 48, "node"),
    ("torch-distributed-with-cache", 33, "dataset-initializer"),
])
def test_upstream_runtime_limits(runtime: str, limit: int, job: str) -> None:
    jobs = upstream_jobs(runtime, 1)
    assert jobs is not None
    got = limit_from_jobs(jobs, runtime)
    assert got.limit == limit
    assert f"replicated job {job} <name>-{job}-0-0-#####" in got.reason
    # the name JobSet would check, at the limit and one past it
    worst = next(j for j in jobs if j.name == job)
    assert len(worst.pod_name("a" * limit)) == 63
    assert len(worst.pod_name("a" * (limit + 1))) == 64


def test_more_nodes_lengthen_the_trainer_pod_index() -> None:
    assert limit_from_jobs(upstream_jobs("torch-distributed", 10) or [], "x").limit == 48
    assert limit_from_jobs(upstream_jobs("torch-distributed", 11) or [], "x").limit == 47
    two_replicas = [ReplicatedJob("node", replicas=11, pods=1)]
    assert limit_from_jobs(two_replicas, "x").limit == 47


def test_upstream_table_matches_the_upstream_runtime_files() -> None:
    """The table validate uses is what the verbatim upstream manifests say."""
    folder = upstream_root() / "kubeflow-trainer" / "runtimes"
    files = sorted(folder.glob("*.yaml"))
    assert files, f"no upstream runtimes in {folder}"
    for path in files:
        runtime = yaml.safe_load(path.read_text(encoding="utf-8"))
        name = runtime["metadata"]["name"]
        for nodes in (1, 12):
            assert jobs_of_runtime(runtime, nodes) == upstream_jobs(name, nodes), name
    assert {yaml.safe_load(p.read_text())["metadata"]["name"] for p in files} \
        <= set(UPSTREAM_RUNTIMES)


def test_runtime_read_from_a_cluster() -> None:
    runtime = {"spec": {"mlPolicy": {"numNodes": 3}, "template": {"spec": {"replicatedJobs": [
        {"name": "prepare-the-dataset-first", "replicas": 2,
         "template": {"spec": {"parallelism": 4}}},
        {"name": "trainer", "template": {"metadata": {"labels": {
            "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}}}},
    ]}}}}
    assert jobs_of_runtime(runtime) == [ReplicatedJob("prepare-the-dataset-first", 2, 4),
                                        ReplicatedJob("trainer", 1, 3)]
    assert jobs_of_runtime(runtime, 12)[1] == ReplicatedJob("trainer", 1, 12)
    assert limit_from_jobs(jobs_of_runtime(runtime), "mine").limit == 63 - len(
        "-prepare-the-dataset-first-1-3-#####")


def test_validate_refuses_a_name_the_torchtune_runtime_cannot_run() -> None:
    """The issue's example: 38 characters on the upstream torchtune runtime."""
    name = "llama32-1b-alpaca-lora-experiment-0001"
    (got,) = _errors({"metadata": {"name": name}})
    assert got == ("kubeflow.name-length",
                   ("a TrainJob name may have at most 33 characters here (this one, "
                   f"{name!r}, has 38): on runtime torchtune-llama3.2-1b, JobSet names the "
                   "pods of replicated job dataset-initializer "
                   "<name>-dataset-initializer-0-0-##### (##### random) and refuses pod "
                   "names over 63 characters"))
    assert _errors({"metadata": {"name": "a" * 33}}) == []


def test_generated_runtime_and_named_runtimes() -> None:
    assert _errors({**ACCEL_GENERATED, "metadata": {"name": "a" * 48}}) == []
    (got,) = _errors({**ACCEL_GENERATED, "metadata": {"name": "a" * 49}})
    assert got[0] == "kubeflow.name-length" and "at most 48" in got[1]
    assert "replicated job node <name>-node-0-0-#####" in got[1]
    deepspeed = {"deploy": {"kubeflow": {"runtime": {"name": "deepspeed-distributed"}}}}
    assert _errors({**deepspeed, "metadata": {"name": "a" * 44}}) == []
    assert [c for c, _ in _errors({**deepspeed, "metadata": {"name": "a" * 45}})] \
        == ["kubeflow.name-length"]
    # a runtime only the cluster knows: checked at plan, 63 at validate
    custom = {"deploy": {"kubeflow": {"runtime": {"name": "team-runtime"}}},
              "metadata": {"name": "a" * 63}}
    assert _errors(custom) == []


def test_sweep_point_names_fit_the_runtime() -> None:
    doc = parse_yaml(yaml.safe_dump(spec_data(metadata={"name": "a" * 30})), "spec.yaml")
    spec = validate_doc(doc).spec
    assert spec is not None
    limit = name_limit(spec)
    assert limit is not None and limit.limit == 33
    point = Point((("training.learning_rate", 0.001),), (0,))
    _, name = point_id("ident", spec, point)
    assert len(name) <= 33 and name.startswith("a" * 20)
    ray = validate_doc(parse_yaml(yaml.safe_dump(spec_data(
        metadata={"name": "a" * 45}, deploy={"target": "kuberay"})), "spec.yaml")).spec
    assert ray is not None
    assert len(point_id("ident", ray, point)[1]) <= 47


@pytest.mark.parametrize("runtime", [None, "team-runtime"], ids=["upstream", "cluster's"])
def test_build_job_reads_the_name_limit_once(monkeypatch: pytest.MonkeyPatch,
                                             runtime: str | None) -> None:
    """A Job's sweep point name and the runtime plan reads from the cluster both need the
    runtime's name limit: ``build_job`` works it out once (before, once for each)."""
    from ftspec.compiler import build

    limits: list[Any] = []

    def counted(*args: Any) -> Any:
        limits.append(name_limit(*args))
        return limits[-1]

    monkeypatch.setattr(build, "name_limit", counted)
    change = {"deploy": {"kubeflow": {"runtime": {"name": runtime}}}} if runtime else {}
    spec = validate_doc(parse_yaml(yaml.safe_dump(spec_data(
        metadata={"name": "a" * 40}, **change)), "spec.yaml")).spec
    assert spec is not None
    job = build.build_job(spec, point=Point((("training.learning_rate", 0.001),), (0,)))
    assert len(limits) == 1
    assert (limits[0] is None) == (runtime is not None)
    assert len(job.name) <= (63 if runtime else 33)
    assert job.cluster_runtime == (("ClusterTrainingRuntime", runtime) if runtime else None)
