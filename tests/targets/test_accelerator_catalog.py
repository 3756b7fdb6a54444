"""The accelerator catalog is read everywhere: memory as reported, node labels on the
Kubernetes targets' GPU pods, Ray resources for every entry."""

from __future__ import annotations

import pytest
from ftspec.spec.catalog.accelerators import ACCELERATORS, NODE_LABEL
from ftspec.targets import get_target
from ftspec.targets import ray as ray_target
from ftspec.targets.kuberay import rayjob
from helpers.jobs import make_job


def test_memory_is_what_the_device_reports() -> None:
    assert ACCELERATORS["nvidia-l40s"].memory_gib == pytest.approx(44.99, abs=0.01)
    assert ACCELERATORS["nvidia-h100-80gb"].memory_gib == pytest.approx(79.65, abs=0.01)
    assert ACCELERATORS["nvidia-h200"].memory_gib == pytest.approx(140.4, abs=0.01)
    marketed = {a.key: float(a.display.rsplit(" ", 1)[-1].removesuffix("GB"))
                for a in ACCELERATORS.values() if a.display.endswith("GB")}
    assert marketed and all(ACCELERATORS[k].memory_gib <= gb for k, gb in marketed.items())


@pytest.mark.parametrize("key", sorted(ACCELERATORS))
def test_every_accelerator_reaches_ray_and_kubernetes(key: str) -> None:
    acc = ACCELERATORS[key]
    job = make_job(resources={"accelerator": key}, model={"dtype": "bf16" if acc.bf16 else "fp16"},
                   deploy={"target": "ray"}, secrets=None)
    body = ray_target.submission(job)
    assert body["entrypoint_resources"] == {f"accelerator_type:{acc.ray_type}": 0.001}
    workers = rayjob(job)["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert workers["template"]["spec"]["nodeSelector"] == {NODE_LABEL: acc.product_label}
    objs = {a.path: a.obj for a in get_target("kubeflow").compile(job)}
    patch = dict(objs["trainjob.yaml"] or {})["spec"]["runtimePatches"][0]
    pods = {j["name"]: j["template"]["spec"]["template"]["spec"]
            for j in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]}
    assert pods["node"]["nodeSelector"] == {NODE_LABEL: acc.product_label}


def test_cpu_jobs_select_no_gpu_nodes() -> None:
    job = make_job(resources={"gpus_per_node": 0, "accelerator": None},
                   model={"dtype": "fp32"}, training={"global_batch_size": 2}, secrets=None)
    assert "entrypoint_resources" not in ray_target.submission(job)
    workers = rayjob(job)["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert "nodeSelector" not in workers["template"]["spec"]


def test_the_specs_node_selector_wins_on_the_same_key() -> None:
    job = make_job(deploy={"scheduling": {"node_selector": {NODE_LABEL: "NVIDIA-A100-80GB-PCIe"}}})
    workers = rayjob(job)["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert workers["template"]["spec"]["nodeSelector"] == {NODE_LABEL: "NVIDIA-A100-80GB-PCIe"}
