"""A cluster's own ValidatingAdmissionPolicy (native CEL, no webhook) refusing ftspec's TrainJob:
`plan`'s server dry run shows the server's refusal as the policy's, never as RBAC nor a traceback,
and `apply` leaves the cluster as it was."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from helpers.kubecli import REPO, run_cli, spec_copy

from realcluster.prepare import compiled, prepare_references

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(600)]

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
EXAMPLE = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
MAX_GPUS = 2
TEAM_MESSAGE = "every TrainJob needs a team label"
GPU_MESSAGE = f"at most {MAX_GPUS} GPUs per node for TrainJobs here"
_LIMITS = "object.spec.trainer.resourcesPerNode.limits"
GPU_RULE = (
    f"!has(object.spec.trainer) || !has(object.spec.trainer.resourcesPerNode) || !has({_LIMITS}) || "
    f"!('nvidia.com/gpu' in {_LIMITS}) || "
    f"quantity(string({_LIMITS}['nvidia.com/gpu'])).compareTo(quantity('{MAX_GPUS}')) <= 0"
)


def policy(name: str) -> dict[str, Any]:
    """Two rules: a missing team label is refused with the default reason (Invalid: HTTP 422), too
    many GPUs with ``reason: Forbidden`` (HTTP 403, the status RBAC answers with too)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["*"],
                "operations": ["CREATE", "UPDATE"], "resources": ["trainjobs"]}]},
            "validations": [
                {"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
                 "message": TEAM_MESSAGE},
                {"expression": GPU_RULE, "message": GPU_MESSAGE, "reason": "Forbidden"},
            ],
        },
    }


def binding(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}},
    }


@contextmanager
def bound_policy(cluster: Any, ns: str, trainjob: dict[str, Any]) -> Iterator[str]:
    """The policy bound to ``ns`` only, enforced (its informer caught up) on entry; removed on exit."""
    name = f"ftspec-test-{ns}"[:63]
    cluster.request("POST", POLICIES, policy(name))
    cluster.request("POST", BINDINGS, binding(name, ns))
    unlabelled = {**trainjob, "metadata": {**trainjob["metadata"], "labels": {}}}

    def enforced() -> bool:
        try:
            cluster.request("POST", f"{TRAINER}/namespaces/{ns}/trainjobs?dryRun=All", unlabelled)
        except Exception as err:  # noqa: BLE001 - the harness's KubeApiError; anything else fails below
            return TEAM_MESSAGE in str(err)
        return False

    try:
        cluster.wait_for("the ValidatingAdmissionPolicy enforced", enforced, 60)
        yield name
    finally:
        cluster.request("DELETE", f"{BINDINGS}/{name}")
        cluster.request("DELETE", f"{POLICIES}/{name}")


def _trainjob(capsys: pytest.CaptureFixture[str], env: dict[str, Any]) -> dict[str, Any]:
    """The example's TrainJob, with what it references created in the test's namespace."""
    objs = compiled(capsys, EXAMPLE, env["ns"], "kubeflow")
    prepare_references(env["cluster"], env["ns"], objs)
    (trainjob,) = [o for o in objs if o["kind"] == "TrainJob"]
    return trainjob


@pytest.fixture
def policed(real_env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> Iterator[dict[str, Any]]:
    """The policy bound to the test's namespace before the test."""
    with bound_policy(real_env["cluster"], real_env["ns"], _trainjob(capsys, real_env)) as name:
        yield {**real_env, "policy": name}


def _refused(text: str, message: str, policy_name: str) -> None:
    assert "Traceback" not in text and "internal error" not in text, text
    assert f"the cluster's ValidatingAdmissionPolicy {policy_name} (binding {policy_name}) denied it: {message}" in text, text
    assert "a Role" not in text and "you may not" not in text, text  # not read as RBAC
    assert "fix the spec value named above" not in text, text  # a policy names no field


def _nothing_created(cluster: Any, ns: str) -> None:
    assert cluster.request("GET", f"{TRAINER}/namespaces/{ns}/trainjobs")["items"] == []
    owned = "app.kubernetes.io%2Fmanaged-by%3Dftspec"
    assert cluster.request("GET", f"/api/v1/namespaces/{ns}/configmaps?labelSelector={owned}")["items"] == []


def test_policy_refusing_a_missing_label_is_the_servers_refusal(policed: dict[str, Any],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Reason Invalid (422): the plan fails with the policy's message, at the spec whose object it refused."""
    cluster, ns, tmp, name = policed["cluster"], policed["ns"], policed["tmp"], policed["policy"]
    spec = spec_copy(tmp, "no-team.yaml", {"  labels: {team: nlp}\n": ""})
    plan = run_cli(capsys, "plan", spec, "-n", ns)
    assert plan.code == 1, plan.out + plan.err
    _refused(plan.out + plan.err, TEAM_MESSAGE, name)
    assert f"  at {spec} (its TrainJob; the policy names no field)" in plan.err, plan.err
    assert "planned without server defaults" not in plan.out + plan.err
    applied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert applied.code == 1, applied.out + applied.err
    _refused(applied.out + applied.err, TEAM_MESSAGE, name)
    _nothing_created(cluster, ns)


def test_policy_refusing_with_403_is_not_read_as_rbac(policed: dict[str, Any],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Reason Forbidden (403, RBAC's status too): the policy's refusal at the spec, never 'ask a
    cluster admin for a Role'; within the policy's limit the same spec plans a create."""
    cluster, ns, tmp, name = policed["cluster"], policed["ns"], policed["tmp"], policed["policy"]
    spec = spec_copy(tmp, "many-gpus.yaml")
    plan = run_cli(capsys, "plan", spec, "-n", ns)
    assert plan.code == 1, plan.out + plan.err
    _refused(plan.out + plan.err, GPU_MESSAGE, name)
    assert f"  at {spec} (its TrainJob; the policy names no field)" in plan.err, plan.err
    applied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert applied.code == 1, applied.out + applied.err
    _refused(applied.out + applied.err, GPU_MESSAGE, name)
    _nothing_created(cluster, ns)
    within = run_cli(capsys, "plan", spec, "-n", ns, "--set", f"resources.gpus_per_node={MAX_GPUS}",
                     "--detailed-exitcode")
    assert within.code == 2 and "will be created" in within.out, within.out + within.err


def test_saved_plan_refused_by_a_policy_bound_since_changes_nothing(real_env: dict[str, Any],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A plan saved before the policy was bound, applied after: apply's dry run meets the
    policy's refusal, said at the spec, and nothing is created."""
    cluster, ns, tmp = real_env["cluster"], real_env["ns"], real_env["tmp"]
    trainjob = _trainjob(capsys, real_env)
    spec = spec_copy(tmp, "saved.yaml")
    saved = tmp / "plan.json"
    plan = run_cli(capsys, "plan", spec, "-n", ns, "--out", saved)
    assert plan.code == 0 and "will be created" in plan.out, plan.out + plan.err
    with bound_policy(cluster, ns, trainjob) as name:
        applied = run_cli(capsys, "apply", "--plan", saved)
        text = applied.out + applied.err
        assert applied.code == 1, text
        _refused(text, GPU_MESSAGE, name)
        assert f"  at {spec} (its TrainJob; the policy names no field)" in text, text
        _nothing_created(cluster, ns)
