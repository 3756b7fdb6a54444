"""A ValidatingAdmissionPolicy's refusal, as kube-apiserver 1.36 words it, read from the Status
body: the policy's message, never RBAC nor an invalid spec value, whatever its status."""

from __future__ import annotations

from typing import Any

import pytest
from ftspec.reconciler.kubernetes.errors import api_error

POLICY = "trainjob-team"
DENIED = (f'trainjobs.trainer.kubeflow.org "j" is forbidden: ValidatingAdmissionPolicy '
          f"'{POLICY}' with binding '{POLICY}-ml' denied request: every TrainJob needs a team label")


def _status(code: int, reason: str) -> dict[str, Any]:
    """The Status the dispatcher writes: NewForbidden's message, the policy's reason and code."""
    return {"kind": "Status", "status": "Failure", "message": DENIED, "reason": reason, "code": code,
            "details": {"name": "j", "group": "trainer.kubeflow.org", "kind": "trainjobs",
                        "causes": [{"message": DENIED.split(" is forbidden: ", 1)[1]}]}}


@pytest.mark.parametrize(("code", "reason"), [(422, "Invalid"), (403, "Forbidden"), (400, "BadRequest")])
def test_a_policy_refusal_names_the_policy_and_its_message(code: int, reason: str) -> None:
    err = api_error(code, _status(code, reason), verb="create", what="TrainJob ml/j")
    text = str(err)
    assert err.policy == POLICY and err.status == code
    assert text == (f"the server refused to create TrainJob ml/j: the cluster's "
                    f"ValidatingAdmissionPolicy {POLICY} (binding {POLICY}-ml) denied it: "
                    "every TrainJob needs a team label")
    assert "you may not" not in text and "Role" not in (err.hint or "")
    assert "not RBAC" in (err.hint or "") and f"validatingadmissionpolicy {POLICY}" in (err.hint or "")
    assert err.spec_path is None and err.fields == [] and not err.retryable


def test_a_policy_without_a_binding_name() -> None:
    body = {"message": f"ValidatingAdmissionPolicy '{POLICY}' denied request: no", "reason": "Forbidden"}
    err = api_error(403, body, verb="apply", what="TrainJob ml/j")
    assert err.policy == POLICY and str(err).endswith(f"ValidatingAdmissionPolicy {POLICY} denied it: no")
