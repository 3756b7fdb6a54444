"""The CRD -> JSON Schema converter catches what the API server's schema would reject."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from helpers.crd_schema import convert, validation_errors
from helpers.upstream import RAYJOB_CRD, TRAINJOB_CRDS, crd


def _ok(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(convert(schema)).is_valid(value)


def test_unknown_fields_rejected_unless_preserved() -> None:
    closed = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert _ok(closed, {"a": "x"})
    assert not _ok(closed, {"a": "x", "b": 1})
    opened = {**closed, "x-kubernetes-preserve-unknown-fields": True}
    assert _ok(opened, {"a": "x", "b": 1})


def test_int_or_string_and_pattern() -> None:
    quantity = {"x-kubernetes-int-or-string": True, "pattern": r"^[0-9]+(Gi|Mi)?$"}
    assert _ok(quantity, 4)
    assert _ok(quantity, "4Gi")
    assert not _ok(quantity, "four")
    assert not _ok(quantity, 1.5)
    assert not _ok(quantity, [4])


def test_nullable_and_int_formats() -> None:
    assert _ok({"type": "string", "nullable": True}, None)
    assert not _ok({"type": "string"}, None)
    assert _ok({"type": "integer", "format": "int32"}, 2**31 - 1)
    assert not _ok({"type": "integer", "format": "int32"}, 2**31)
    assert _ok({"type": "integer", "format": "int64"}, 2**40)


def test_maps_and_embedded_resources() -> None:
    labels = {"type": "object", "additionalProperties": {"type": "string"}}
    assert _ok(labels, {"a": "b"})
    assert not _ok(labels, {"a": 1})
    embedded = {"type": "object", "x-kubernetes-embedded-resource": True,
                "properties": {"spec": {"type": "object"}}}
    assert _ok(embedded, {"apiVersion": "v1", "kind": "Pod", "spec": {}})
    assert not _ok(embedded, {"spek": {}})


MINIMAL_TRAINJOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "x", "namespace": "ml"},
    "spec": {"runtimeRef": {"name": "torch-distributed"}},
}


@pytest.mark.parametrize("release", sorted(TRAINJOB_CRDS))
def test_real_crd_accepts_minimal_and_rejects_broken(release: str) -> None:
    path = crd(TRAINJOB_CRDS[release])
    assert validation_errors(MINIMAL_TRAINJOB, path, "v1alpha1") == []
    broken: dict[str, Any] = yaml.safe_load(yaml.safe_dump(MINIMAL_TRAINJOB))
    broken["spec"]["runtimeRef"] = {}  # name is required
    broken["spec"]["trainer"] = {"numNodes": "two", "resourcesPerNode": {
        "limits": {"nvidia.com/gpu": "lots"}}}
    broken["spec"]["trainr"] = {}
    errors = "\n".join(validation_errors(broken, path, "v1alpha1"))
    assert "'name' is a required property" in errors
    assert "spec.trainer.numNodes" in errors
    assert "spec.trainer.resourcesPerNode.limits.nvidia.com/gpu" in errors
    assert "'trainr' was unexpected" in errors
    wrong_kind = {**MINIMAL_TRAINJOB, "kind": "TrainingRuntime"}
    assert validation_errors(wrong_kind, path, "v1alpha1")


def test_rayjob_crd_rejects_string_replicas() -> None:
    path: Path = crd(RAYJOB_CRD)
    obj = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"},
           "spec": {"entrypoint": "echo", "rayClusterSpec": {"headGroupSpec": {
               "template": {"spec": {"containers": [{"name": "h", "image": "i"}]}}},
               "workerGroupSpecs": [{"groupName": "w", "replicas": "1", "minReplicas": 1,
                                     "maxReplicas": 1, "template": {"spec": {
                                         "containers": [{"name": "w", "image": "i"}]}}}]}}}
    errors = validation_errors(obj, path, "v1")
    assert any("replicas" in e for e in errors), errors
    obj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] = 1
    assert validation_errors(obj, path, "v1") == []
