"""overrides.trainjob / overrides.rayjob: RFC 7386 merge patches applied after everything else."""

from __future__ import annotations

from typing import Any

import pytest
from ftspec.targets import get_target
from ftspec.targets.merge_patch import merge_patch
from helpers.jobs import make_job

TRAINJOB_PATCH: dict[str, Any] = {"spec": {
    "suspend": True,
    "trainer": {"env": [{"name": "NCCL_DEBUG", "value": "INFO"}]},
}}
RAYJOB_PATCH: dict[str, Any] = {"spec": {
    "suspend": True, "ttlSecondsAfterFinished": None,
    "rayClusterSpec": {"enableInTreeAutoscaling": True},
}}


@pytest.mark.parametrize(("target", "doc", "patch", "expected"), [
    # RFC 7386 appendix A, a selection
    ("-", {"a": "b"}, {"a": "c"}, {"a": "c"}),
    ("-", {"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ("-", {"a": "b"}, {"a": None}, {}),
    ("-", {"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ("-", {"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ("-", {"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ("-", {"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ("-", ["a", "b"], {"a": "b"}, {"a": "b"}),
    ("-", {}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
])
def test_rfc7386_examples(target: str, doc: Any, patch: Any, expected: Any) -> None:
    before = repr(doc)
    assert merge_patch(doc, patch) == expected
    assert repr(doc) == before


def test_trainjob_patch_reaches_the_trainjob() -> None:
    job = make_job(overrides={"trainjob": TRAINJOB_PATCH})
    assert not [d for d in get_target("kubeflow").check(job) if d.is_error]
    (tj,) = [a.obj for a in get_target("kubeflow").compile(job) if a.path == "trainjob.yaml"]
    assert tj is not None
    assert tj["spec"]["suspend"] is True
    assert tj["spec"]["trainer"]["env"] == [{"name": "NCCL_DEBUG", "value": "INFO"}]
    # everything else ftspec generated is still there
    assert tj["spec"]["trainer"]["command"] == ["tune", "run"]
    assert tj["spec"]["runtimeRef"]["name"] == "torchtune-llama3.2-1b"


def test_rayjob_patch_reaches_the_rayjob() -> None:
    job = make_job(deploy={"target": "kuberay", "kuberay": {"image": "acme/ft:1"}},
                   resources={"gpus_per_node": 1}, training={"global_batch_size": 2},
                   overrides={"rayjob": RAYJOB_PATCH})
    (art,) = get_target("kuberay").compile(job)
    assert art.obj is not None
    spec = art.obj["spec"]
    assert spec["suspend"] is True
    assert "ttlSecondsAfterFinished" not in spec
    assert spec["rayClusterSpec"]["enableInTreeAutoscaling"] is True
    assert spec["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] == 1
    assert "suspend: true" in art.content


@pytest.mark.parametrize(("target", "field", "patch"), [
    ("kubeflow", "trainjob", {"metadata": {"name": "other"}}),
    ("kubeflow", "trainjob", {"metadata": {"labels": {"ftspec.dev/spec-id": None}}}),
    ("kuberay", "rayjob", {"kind": "RayCluster"}),
])
def test_patch_may_not_change_identity(target: str, field: str, patch: dict[str, Any]) -> None:
    job = make_job(deploy={"target": target}, resources={"gpus_per_node": 1},
                   training={"global_batch_size": 2}, overrides={field: patch})
    errors = [d for d in get_target(target).check(job) if d.is_error]
    assert any(d.code == f"{target}.patch-identity" and d.path[:2] == ("overrides", field)
               for d in errors), [d.format() for d in errors]
