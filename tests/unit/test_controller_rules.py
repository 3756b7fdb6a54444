"""What the real controllers do with ftspec's objects, as pure decisions (issue 33):
admission webhook refusals are the server's refusal (never RBAC), the Trainer's
runtimePatches rule plans a replace, apply creates a runtime before its TrainJob and
retries the TrainJob while the controller's cache catches up.

The Status bodies are those kube-apiserver sends: a webhook's refusal is
``admission webhook "<name>" denied the request: <its message>`` with the webhook's code
(controller-runtime denies with 403 Forbidden; ``ToStatusErr`` in k8s.io/apiserver); RBAC's
is ``<resource> "<name>" is forbidden: User "<u>" cannot <verb> resource …``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ftspec.reconciler.backend import Reporter
from ftspec.reconciler.kubernetes import applier
from ftspec.reconciler.kubernetes.errors import ApiError, api_error
from ftspec.reconciler.kubernetes.planner import ObjectInput, decide
from ftspec.reconciler.model import Action, Change

TRAINER_WEBHOOK = "validator.trainjob.trainer.kubeflow.org"
NOT_YET = (f'admission webhook "{TRAINER_WEBHOOK}" denied the request: spec.runtimeRef: '
           'Invalid value: {"name":"j-runtime","apiGroup":"trainer.kubeflow.org",'
           '"kind":"TrainingRuntime"}: trainingruntimes.trainer.kubeflow.org "j-runtime" not '
           "found: specified trainingRuntime must be created before the TrainJob is created")
PATCHES = (f'admission webhook "{TRAINER_WEBHOOK}" denied the request: spec.runtimePatches: '
           "Forbidden: RuntimePatches can only be modified when the TrainJob is suspended "
           "before or after the update")
RBAC = ('trainjobs.trainer.kubeflow.org "j" is forbidden: User "limited" cannot patch '
        'resource "trainjobs" in API group "trainer.kubeflow.org" in the namespace "ml"')


def _status(message: str, code: int = 403, reason: str = "Forbidden") -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": reason, "code": code}


@pytest.mark.parametrize(("message", "field", "spec_path"), [
    (NOT_YET, "spec.runtimeRef", "deploy.kubeflow.runtime"),
    (PATCHES, "spec.runtimePatches", None),
])
def test_a_webhook_403_is_the_servers_refusal_not_rbac(message: str, field: str,
                                                      spec_path: str | None) -> None:
    err = api_error(403, _status(message), verb="apply", what="TrainJob ml/j")
    assert err.webhook == TRAINER_WEBHOOK
    assert str(err) == f"the server refused to apply TrainJob ml/j: {message}"
    assert "forbidden: you may not" not in str(err)
    assert "Role" not in (err.hint or "") and "not RBAC" in (err.hint or "")
    assert err.fields == [field] and err.spec_path == spec_path
    assert not err.retryable


def test_webhook_refusals_with_other_codes_and_several_fields() -> None:
    several = (f'admission webhook "{TRAINER_WEBHOOK}" denied the request: [spec.runtimeRef: '
               "Invalid value: x: must have dataset-initializer job, spec.trainer.numNodes: "
               "Invalid value: 2: must have 1]")
    err = api_error(400, _status(several, 400, "BadRequest"), verb="apply", what="T")
    assert err.webhook == TRAINER_WEBHOOK
    assert err.fields == ["spec.runtimeRef", "spec.trainer.numNodes"]
    cel = ('admission webhook "cel-rules.ftspec.dev" denied the request: TrainJob.trainer'
           '.kubeflow.org "j" is invalid: spec.managedBy: Invalid value: "x": immutable')
    err = api_error(422, _status(cel, 422, "Invalid"), verb="apply", what="T")
    assert err.webhook == "cel-rules.ftspec.dev" and err.fields == ["spec.managedBy"]


def test_a_403_is_rbac_only_when_the_api_says_so() -> None:
    err = api_error(403, _status(RBAC), verb="apply", what="trainjobs ml/j")
    assert err.webhook is None
    assert str(err).startswith("forbidden: you may not patch trainjobs.trainer.kubeflow.org")
    other = api_error(403, _status("quota says no", reason="SomethingElse"), verb="apply",
                      what="TrainJob ml/j")
    assert "you may not" not in str(other) and "quota says no (HTTP 403)" in str(other)


def trainjob(suspend: bool = False, zone: str = "a", version: str | None = None
             ) -> dict[str, Any]:
    pod = {"spec": {"nodeSelector": {"zone": zone}}}
    spec: dict[str, Any] = {"runtimeRef": {"name": "rt"}, "trainer": {"numNodes": 1},
                            "suspend": suspend}
    if version == "v2.1":
        spec["podTemplateOverrides"] = [{"targetJobs": [{"name": "node"}], **pod}]
    else:
        spec["runtimePatches"] = [{"manager": "ftspec.dev/ftspec", "trainingRuntimeSpec": {
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {
                "spec": {"template": pod}}}]}}}}]
    labels = {"app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": "a"}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "j", "namespace": "ml", "labels": labels}, "spec": spec}


def _decide(desired: dict[str, Any], live: dict[str, Any], version: str | None) -> Change:
    return decide(ObjectInput("kubeflow", "a", "a.yaml", desired, live, desired, version))


@pytest.mark.parametrize("version", ["v2.2", "v2.3"])
def test_runtime_patches_change_on_a_running_trainjob_is_a_replace(version: str) -> None:
    change = _decide(trainjob(zone="b"), trainjob(zone="a"), version)
    assert change.action is Action.REPLACE
    assert change.reason == ("spec.runtimePatches forces replacement; the Trainer refuses any "
                             "change to spec.runtimePatches while the TrainJob is not "
                             "suspended (deploy.kubeflow.suspend)")
    assert [f.forces_replace for f in change.fields] == [True]
    # suspended before or after the update: the Trainer (v2.3) allows it in place
    assert _decide(trainjob(suspend=True, zone="b"), trainjob(zone="a"),
                   version).action is Action.UPDATE
    assert _decide(trainjob(zone="b"), trainjob(suspend=True, zone="a"),
                   version).action is Action.UPDATE
    assert _decide(trainjob(), trainjob(), version).action is Action.NOOP


def test_pod_template_overrides_generation_needs_the_update_suspended() -> None:
    change = _decide(trainjob(zone="b", version="v2.1"), trainjob(zone="a", version="v2.1"),
                     "v2.1")
    assert change.action is Action.REPLACE
    assert "spec.podTemplateOverrides forces replacement" in (change.reason or "")
    assert _decide(trainjob(suspend=True, zone="b", version="v2.1"),
                   trainjob(zone="a", version="v2.1"), "v2.1").action is Action.UPDATE
    assert _decide(trainjob(zone="b", version="v2.1"),
                   trainjob(suspend=True, zone="a", version="v2.1"),
                   "v2.1").action is Action.REPLACE


def _obj(kind: str, name: str) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": "ml"}}


def test_apply_orders_what_a_trainjob_needs_first() -> None:
    job = Change("kubeflow.TrainJob.ml/j", Action.REPLACE, _obj("TrainJob", "j"),
                 _obj("TrainJob", "j"))
    runtime = Change("kubeflow.TrainingRuntime.ml/j-runtime", Action.CREATE, None,
                     _obj("TrainingRuntime", "j-runtime"))
    files = Change("kubeflow.ConfigMap.ml/j-files", Action.UPDATE, None,
                   _obj("ConfigMap", "j-files"))
    gone = Change("kubeflow.ConfigMap.ml/old", Action.DELETE, _obj("ConfigMap", "old"), None)
    ordered = sorted([job, runtime, files, gone], key=applier._order)
    assert ordered == [gone, runtime, files, job]


class Events(Reporter):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def event(self, message: str, **data: Any) -> None:
        self.lines.append(message)


class Refusing:
    """A transport whose server refuses the TrainJob ``refusals`` times (its webhook's
    cache has not seen the runtime yet), then accepts it."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.calls = 0

    def request(self, method: str, path: str, body: Any = None, **_: Any
                ) -> dict[str, Any] | None:
        if method == "GET":  # the JobSet named like the TrainJob: not there
            return None
        self.calls += 1
        if self.calls <= self.refusals:
            raise api_error(403, _status(NOT_YET), verb="apply", what="TrainJob ml/j")
        return json.loads(body)


def _job_with_runtime() -> dict[str, Any]:
    obj = trainjob()
    obj["spec"]["runtimeRef"] = {"name": "j-runtime", "kind": "TrainingRuntime"}
    return obj


def test_apply_retries_a_trainjob_until_the_webhook_sees_its_new_runtime(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(applier.time, "sleep", lambda s: None)
    t, events = Refusing(3), Events()
    change = Change("kubeflow.TrainJob.ml/j", Action.CREATE, None, _job_with_runtime())
    plan_digests = type("P", (), {"read_digests": {}})()
    applier._execute(t, plan_digests, change, events, False,  # type: ignore[arg-type]
                     {"TrainingRuntime j-runtime"})
    assert t.calls == 4
    waits = [e for e in events.lines if "waiting for the controller" in e]
    assert len(waits) == 3 and "TrainingRuntime j-runtime" in waits[0]
    assert events.lines[-1] == "kubeflow.TrainJob.ml/j: create complete"
    # a runtime this apply did not create: the refusal stands at once
    t = Refusing(1)
    with pytest.raises(ApiError):
        applier._execute(t, plan_digests, change, Events(), False, set())  # type: ignore[arg-type]
    assert t.calls == 1


def test_apply_gives_up_after_the_cache_wait_with_the_denial(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(applier.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(applier.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    t = Refusing(10_000)
    with pytest.raises(ApiError) as caught:
        applier._apply_after_needed(t, _job_with_runtime(), False, Events(),  # type: ignore[arg-type]
                                    "kubeflow.TrainJob.ml/j", "TrainingRuntime j-runtime")
    assert clock[0] <= applier.CACHE_WAIT_S
    assert "specified trainingRuntime must be created" in str(caught.value)
    assert "still refused kubeflow.TrainJob.ml/j after" in (caught.value.hint or "")


def test_a_pending_trainjob_says_the_warning_that_keeps_it_pending() -> None:
    from ftspec.reconciler.kubernetes.events import describe_warning
    from ftspec.reconciler.kubernetes.observe import failure, job_status
    from helpers.jobs import make_job

    live = {"kind": "TrainJob", "metadata": {"name": "j", "namespace": "ml",
                                             "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {}}
    events = [{"object": "TrainJob j", "reason": "TrainJobResourcesCreationFailed",
               "message": "JobSet name is too long", "count": 3, "last": "t"}]
    line = ("Warning TrainJobResourcesCreationFailed on TrainJob j (x3): JobSet name is too "
            "long")
    assert describe_warning(events[0]) == line
    status = job_status(make_job(), "kubeflow.TrainJob.ml/j", live, [], events=events)
    assert status.message == f"created; no trainer pods active yet; {line}"
    assert status.platform["warnings"] == events
    assert job_status(make_job(), "a", live, []).message == "created; no trainer pods " \
        "active yet"
    failed = {**live, "status": {"conditions": [{"type": "Failed", "status": "True",
                                                 "message": "jobset failed"}]}}
    assert line in str(failure(failed, {}, [], events))
