"""``deploy.kubeflow.failure_policy``: the generated TrainingRuntime's JobSet ``failurePolicy``
(v2.3 ``RestartJob`` actions), checked against the upstream TrainingRuntime CRD; refused at the
field where the TrainJob cannot carry it or the pinned Trainer API predates it."""

from __future__ import annotations

from typing import Any

from ftspec.targets import get_target
from ftspec.targets import kubeflow as kf
from helpers.crd_schema import validation_errors
from helpers.jobs import make_job
from helpers.upstream import TRAININGRUNTIME_CRD, crd

POLICY = {"max_restarts": 3, "rules": [
    {"name": "retry-node", "action": "RestartJob", "target_replicated_jobs": ["node"],
     "on_job_failure_reasons": ["PodFailurePolicy"]},
    {"name": "give-up", "action": "FailJobSet"}]}
GENERATED = {"launcher": "accelerate", "distributed": {"strategy": "ddp"},
             "data": {"train": {"uri": "pvc://datasets/alpaca.jsonl"}},
             "output": {"uri": "pvc://outputs/run1"}}


def _job(policy: dict[str, Any], *, pin: str = "auto") -> Any:
    kubeflow = {"generate_runtime": True, "trainer_version": pin, "failure_policy": policy}
    deploy = {"target": "kubeflow", "kubeflow": kubeflow,
              "scheduling": {"image": "ghcr.io/acme/ft:1"}}
    return make_job(deploy=deploy, allow_errors=True, **GENERATED)


def _errors(job: Any) -> list[tuple[tuple[Any, ...], str]]:
    return [(d.path, d.code or "") for d in get_target("kubeflow").check(job) if d.is_error]


def test_generated_runtime_carries_the_policy_and_the_crd_accepts_it() -> None:
    job = _job(POLICY)
    assert _errors(job) == []
    objs = {a.path: a.obj for a in kf.compile_for_version(job, "v2.3")}
    runtime = objs["trainingruntime.yaml"]
    assert runtime is not None
    assert runtime["spec"]["template"]["spec"]["failurePolicy"] == {
        "maxRestarts": 3, "restartStrategy": "Recreate", "rules": [
            {"name": "retry-node", "action": "RestartJob",
             "onJobFailureReasons": ["PodFailurePolicy"], "targetReplicatedJobs": ["node"]},
            {"name": "give-up", "action": "FailJobSet"}]}
    assert validation_errors(runtime, crd(TRAININGRUNTIME_CRD), "v1alpha1") == []


def test_restart_job_refused_on_a_pinned_older_trainer() -> None:
    job = _job(POLICY, pin="v2.2")
    assert _errors(job) == [(("deploy", "kubeflow", "failure_policy", "rules", 0, "action"),
                             "kubeflow.failure-policy-version")]
    # RestartJobSet is older than v2.3: accepted on the pinned v2.2
    older = _job({"rules": [{"name": "all", "action": "RestartJobSet"}]}, pin="v2.2")
    assert _errors(older) == []


def test_refused_where_the_trainjob_cannot_carry_it() -> None:
    job = make_job(deploy={"target": "kubeflow", "kubeflow": {"failure_policy": POLICY | {
        "rules": [{"name": "r", "action": "RestartJob"}]}}}, allow_errors=True)
    assert _errors(job) == [(("deploy", "kubeflow", "failure_policy"),
                             "kubeflow.failure-policy-runtime")]


def test_no_policy_no_field() -> None:
    job = make_job(deploy={"target": "kubeflow", "kubeflow": {"generate_runtime": True},
                           "scheduling": {"image": "x"}}, allow_errors=True, **GENERATED)
    runtime = {a.path: a.obj for a in kf.compile_for_version(job, "v2.3")}["trainingruntime.yaml"]
    assert runtime is not None and "failurePolicy" not in runtime["spec"]["template"]["spec"]
