"""Runtime drift: the live JobSet (what the Trainer rendered) against the runtime as it is now."""

from __future__ import annotations

import copy
from typing import Any

from ftspec.reconciler.kubernetes.runtime_drift import drift_warning, runtime_drift


def _job(name: str, containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "template": {"spec": {"template": {"spec": {"containers": containers}}}}}


def _runtime(node: dict[str, Any], init: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "ClusterTrainingRuntime", "metadata": {"name": "torchtune-llama3.2-1b"},
            "spec": {"template": {"spec": {"replicatedJobs": [
                _job("model-initializer", [init]), _job("node", [node])]}}}}


NODE = {"name": "node", "image": "trainer:v1", "command": ["tune", "run"], "args": ["lora"],
        "env": [{"name": "TORCH_HOME", "value": "/cache"}],
        "resources": {"limits": {"nvidia.com/gpu": "2", "memory": "64Gi"}}}
INIT = {"name": "model-initializer", "image": "init:v1", "env": [{"name": "HF_HUB_CACHE", "value": "/m"}]}
TRAINJOB = {"kind": "TrainJob", "metadata": {"name": "llama", "namespace": "ml"},
            "spec": {"runtimeRef": {"name": "torchtune-llama3.2-1b"},
                     "trainer": {"command": ["tune", "run"], "args": ["x=1"],
                                 "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}}}}


def _rendered(node: dict[str, Any], init: dict[str, Any]) -> dict[str, Any]:
    """A JobSet as the Trainer renders it: the TrainJob's command/args/GPUs and injected env on the node."""
    node = copy.deepcopy(node)
    node.update(command=["tune", "run"], args=["x=1"])
    node["resources"] = {"limits": {**node["resources"]["limits"], "nvidia.com/gpu": "4"}}
    node["env"] = [*node["env"], {"name": "PET_NNODES", "value": "1"}]
    init = copy.deepcopy(init)
    init["env"] = [*init["env"], {"name": "STORAGE_URI", "value": "hf://x"}]
    return {"kind": "JobSet", "spec": {"replicatedJobs": [_job("model-initializer", [init]), _job("node", [node])]}}


def test_unchanged_runtime_has_no_drift_despite_the_trainjobs_own_settings() -> None:
    assert runtime_drift(TRAINJOB, _rendered(NODE, INIT), _runtime(NODE, INIT)) == []


def test_new_trainer_image_and_env_are_drift() -> None:
    now_node = {**NODE, "image": "trainer:v2", "env": [{"name": "TORCH_HOME", "value": "/other"}]}
    now_init = {**INIT, "image": "init:v2"}
    found = runtime_drift(TRAINJOB, _rendered(NODE, INIT), _runtime(now_node, now_init))
    lines = sorted(d.line() for d in found)
    assert lines == [
        "model-initializer/model-initializer image: init:v1 -> init:v2",
        "node/node env TORCH_HOME: /cache -> /other",
        "node/node image: trainer:v1 -> trainer:v2",
    ]
    text = drift_warning(TRAINJOB, _runtime(now_node, now_init), found)
    assert text.startswith("runtime drift: ClusterTrainingRuntime torchtune-llama3.2-1b changed since TrainJob ml/llama")
    assert "node/node image: trainer:v1 -> trainer:v2" in text


def test_what_the_trainjob_sets_is_not_drift() -> None:
    """The TrainJob's command, args and GPUs replace the runtime's: a runtime change there runs nowhere."""
    now_node = {**NODE, "command": ["torchrun"], "args": ["other"],
                "resources": {"limits": {"nvidia.com/gpu": "8", "memory": "64Gi"}}}
    assert runtime_drift(TRAINJOB, _rendered(NODE, INIT), _runtime(now_node, INIT)) == []


def test_resource_the_trainjob_leaves_to_the_runtime_is_drift() -> None:
    now_node = {**NODE, "resources": {"limits": {"nvidia.com/gpu": "2", "memory": "128Gi"}}}
    (found,) = runtime_drift(TRAINJOB, _rendered(NODE, INIT), _runtime(now_node, INIT))
    assert found.line() == "node/node memory limit: 64Gi -> 128Gi"


def test_added_and_removed_replicated_jobs() -> None:
    runtime = _runtime(NODE, INIT)
    runtime["spec"]["template"]["spec"]["replicatedJobs"] = [_job("node", [NODE]), _job("cache", [INIT])]
    lines = sorted(d.line() for d in runtime_drift(TRAINJOB, _rendered(NODE, INIT), runtime))
    assert lines == ["cache/- replicated job: absent -> added", "model-initializer/- replicated job: present -> removed"]
