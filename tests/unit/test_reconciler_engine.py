"""Pure reconciler logic on hand-written Kubernetes objects (no cluster)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler.fielddiff import diff
from ftspec.reconciler.kubernetes.drift import drift_managers
from ftspec.reconciler.kubernetes.essence import applied_digest, essence, with_applied_digest
from ftspec.reconciler.kubernetes.immutable import forcing_pattern
from ftspec.reconciler.kubernetes.planner import ObjectInput, OwnershipError, decide
from ftspec.reconciler.kubernetes.render import trainer_version_from_crd
from ftspec.reconciler.kubernetes.status import rayjob_phase, trainjob_phase
from ftspec.reconciler.model import Action, Phase, Plan
from ftspec.reconciler.saved import load_plan, save_plan

LABELS = {"app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": "a"}


def trainjob(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "j", "namespace": "ml", "labels": dict(LABELS)},
            "spec": {"runtimeRef": {"name": "rt"}, "trainer": {"numNodes": 1},
                     "suspend": False, **spec}}


def live_of(obj: dict[str, Any], managers: list[dict[str, Any]] | None = None
            ) -> dict[str, Any]:
    out = json.loads(json.dumps(with_applied_digest(obj)))
    out["metadata"].update({"uid": "u1", "resourceVersion": "7", "generation": 1,
                            "managedFields": managers or [{"manager": "ftspec",
                                                           "operation": "Apply"}]})
    out["status"] = {"conditions": []}
    return out


def test_essence_drops_server_fields() -> None:
    live = live_of(trainjob())
    assert essence(live) == essence(trainjob())


def test_diff_paths() -> None:
    rows = diff({"a": {"b": [1, 2], "c": 1}, "l": [{"x": 1}]},
                {"a": {"b": [1, 3]}, "l": [{"x": 2}], "n": "k"})
    assert rows == [("a.b", [1, 2], [1, 3]), ("a.c", 1, None), ("l[0].x", 1, 2),
                    ("n", None, "k")]


@pytest.mark.parametrize("kind,path,version,expected", [
    ("TrainJob", "spec.trainer.numNodes", None, "spec.trainer"),
    ("TrainJob", "spec.trainer.numNodes", "v2.1", None),
    ("TrainJob", "spec.runtimeRef.name", "v2.1", "spec.runtimeRef"),
    ("TrainJob", "spec.suspend", None, None),
    ("TrainJob", ("spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
     ".template.spec.template.spec.volumes[0].name"), None,
     ("spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec"
     ".template.spec.volumes")),
    ("TrainJob", ("spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
     ".template.spec.template.spec.nodeSelector.zone"), None, None),
    ("RayJob", "spec.entrypoint", None, "spec.entrypoint"),
    ("RayJob", "spec.suspend", None, None),
    ("ConfigMap", "data.x", None, None),
])
def test_immutable_tables(kind: str, path: str, version: str | None,
                          expected: str | None) -> None:
    assert forcing_pattern(kind, path, version) == expected


def _decide(desired: dict[str, Any], live: dict[str, Any] | None, version: str | None = None
            ) -> Any:
    return decide(ObjectInput("kubeflow", "a", "a.yaml", desired, live, desired, version))


def test_create_noop_update_replace() -> None:
    base = trainjob()
    assert _decide(base, None).action is Action.CREATE
    assert _decide(base, live_of(base)).action is Action.NOOP
    suspended = trainjob(suspend=True)
    change = _decide(suspended, live_of(base))
    assert change.action is Action.UPDATE and not change.drift
    assert [(f.path, f.before, f.after) for f in change.fields] == [("spec.suspend", False, True)]
    bigger = trainjob(trainer={"numNodes": 2})
    change = _decide(bigger, live_of(base))
    assert change.action is Action.REPLACE
    assert change.reason == "spec.trainer forces replacement"
    assert change.fields[0].forces_replace
    assert _decide(bigger, live_of(base), "v2.1").action is Action.UPDATE


def test_drift_from_recorded_digest_and_managed_fields() -> None:
    base = trainjob()
    live = live_of(base, [{"manager": "ftspec", "operation": "Apply"},
                          {"manager": "kubectl-edit", "operation": "Update",
                           "fieldsV1": {"f:spec": {"f:suspend": {}}}}])
    live["spec"]["suspend"] = True
    change = _decide(base, live)
    assert change.drift and "kubectl-edit" in (change.reason or "")
    assert drift_managers(live, ["spec.suspend"]) == ["kubectl-edit"]
    assert drift_managers(live, ["spec.trainer.numNodes"]) == []
    # edited without a managedFields trace: the recorded digest still tells
    plain = live_of(base)
    plain["spec"]["suspend"] = True
    assert plain["metadata"]["annotations"]["ftspec.dev/applied-digest"] == applied_digest(base)
    assert _decide(base, plain).drift


def test_never_takes_over_another_owner() -> None:
    base = trainjob()
    other = live_of(base)
    other["metadata"]["labels"]["ftspec.dev/spec-id"] = "b"
    with pytest.raises(OwnershipError, match="spec 'b'"):
        _decide(base, other)
    del other["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    with pytest.raises(OwnershipError, match="other than ftspec"):
        _decide(base, other)


def test_saved_plan_round_trip(tmp_path: Path) -> None:
    change = _decide(trainjob(trainer={"numNodes": 2}), live_of(trainjob()))
    plan = Plan("kubernetes", (change,), {change.address: "rv:7"}, {"a.yaml": "h"})
    save_plan(plan, tmp_path / "p.json")
    assert load_plan(tmp_path / "p.json") == plan


def test_status_mapping() -> None:
    tj = {"kind": "TrainJob", "status": {"conditions": [
        {"type": "Suspended", "status": "True"}]}}
    assert trainjob_phase(tj)[0] is Phase.PENDING
    tj["status"]["conditions"].append({"type": "Failed", "status": "True", "message": "x"})
    assert trainjob_phase(tj)[:2] == (Phase.FAILED, "x")
    assert rayjob_phase({"status": {"jobDeploymentStatus": "Complete",
                                    "jobStatus": "SUCCEEDED"}})[0] is Phase.SUCCEEDED
    assert rayjob_phase({"status": {"jobDeploymentStatus": "Complete",
                                    "jobStatus": "FAILED"}})[0] is Phase.FAILED
    assert rayjob_phase({"status": {"jobDeploymentStatus": "Running",
                                    "jobStatus": "RUNNING"}})[0] is Phase.RUNNING


def test_trainer_version_detection() -> None:
    def crd(prop: str) -> dict[str, Any]:
        return {"spec": {"versions": [{"schema": {"openAPIV3Schema": {"properties": {
            "spec": {"properties": {prop: {}}}}}}}]}}
    assert trainer_version_from_crd(crd("podTemplateOverrides")) == "v2.1"
    assert trainer_version_from_crd(crd("runtimePatches")) == "v2.2"


def test_render_plan_terraform_style() -> None:
    from ftspec.cli.render_plan import render_plan

    change = _decide(trainjob(trainer={"numNodes": 2}), live_of(trainjob()))
    from rich.text import Text

    text = Text.from_markup(render_plan(Plan("kubernetes", (change,)).to_json())).plain
    assert "must be replaced" in text
    assert "-/+" in text and "# forces replacement" in text
    assert "unchanged attributes hidden" in text
    assert "Plan: 1 to add, 0 to change, 1 to destroy." in text
    assert "--out" in text


def test_essence_leaves_its_input_alone_and_shares_nothing() -> None:
    live = live_of(trainjob())
    before = json.loads(json.dumps(live))
    out = essence(live)
    assert live == before
    out["spec"]["x"] = 1
    out["metadata"]["labels"]["new"] = "y"
    assert live == before
    assert essence({"metadata": {"labels": {}, "annotations": {
        "ftspec.dev/applied-digest": "d"}}, "status": {}}) == {"metadata": {}}
    assert essence({"metadata": None, "spec": {}}) == {"metadata": None, "spec": {}}


def test_plan_json_is_asdict_without_sharing() -> None:
    from dataclasses import asdict

    from ftspec.reconciler.model import Change, FieldChange

    live = live_of(trainjob())
    change = Change("kubeflow.TrainJob.ml/a", Action.UPDATE, essence(live), live,
                    reason="drift", fields=(FieldChange("spec.x", [1, (2, 3)], {"a": None}),),
                    ml_changes=("lr 1 -> 2",), drift=True, spec_file="a.yaml")
    plan = Plan("kubernetes", (change,), {"a": "rv:1"}, {"a.yaml": "h"}, ("w",))
    data = plan.to_json()
    expected = asdict(plan)
    expected["changes"][0]["action"] = "update"
    assert data == expected
    assert [type(v) for v in data["changes"][0]["fields"][0]["before"]] == [int, tuple]
    data["changes"][0]["after"]["metadata"]["name"] = "changed"
    assert live["metadata"]["name"] != "changed"
