"""When the plan may skip the server's dry-run: ``drift.unchanged_since_applied`` on
hand-written objects, each condition broken in turn (the real server's side is
``tests/integration/test_kube_reconcile.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ftspec.reconciler.kubernetes.drift import unchanged_since_applied
from ftspec.reconciler.kubernetes.essence import with_applied_digest

DESIRED: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "j", "namespace": "ml",
                 "labels": {"app.kubernetes.io/managed-by": "ftspec"}},
    "spec": {"suspend": False, "trainer": {"numNodes": 1, "args": ["a", "b"],
                                           "env": [{"name": "X", "value": "1"}]}},
}
FIELDS = {"f:metadata": {"f:labels": {".": {}, "f:app.kubernetes.io/managed-by": {}},
                         "f:annotations": {".": {}, "f:ftspec.dev/applied-digest": {}}},
          "f:spec": {".": {}, "f:suspend": {},
                     "f:trainer": {".": {}, "f:numNodes": {}, "f:args": {}, "f:env": {}}}}


def _live(**edits: Any) -> dict[str, Any]:
    """What the server holds after ftspec applied DESIRED (server defaults included)."""
    live = json.loads(json.dumps(with_applied_digest(DESIRED)))
    live["metadata"].update(uid="u", resourceVersion="9", managedFields=[
        {"manager": "ftspec", "operation": "Apply", "fieldsV1": json.loads(json.dumps(FIELDS))},
        {"manager": "trainer-controller", "operation": "Update", "subresource": "status",
         "fieldsV1": {"f:status": {}}}])
    live["spec"]["trainer"]["env"][0]["valueFrom"] = None
    live["spec"]["managedBy"] = "trainer.kubeflow.org/trainjob-controller"  # a default
    live["status"] = {"conditions": []}
    live.update(edits)
    return live


def test_the_object_ftspec_applied_is_known_unchanged() -> None:
    assert unchanged_since_applied(_live(), DESIRED)


def _changed_spec() -> dict[str, Any]:
    out = json.loads(json.dumps(DESIRED))
    out["spec"]["trainer"]["numNodes"] = 2
    return out


@pytest.mark.parametrize("case", [
    "another spec", "no digest", "value changed", "list item changed", "list grew",
    "int became float", "bool became int", "another manager", "an Update by ftspec",
    "a field ftspec no longer sets", "a field set under ftspec's name"])
def test_anything_that_may_differ_is_left_to_the_server(case: str) -> None:
    live, desired = _live(), DESIRED
    trainer = live["spec"]["trainer"]
    owned = live["metadata"]["managedFields"][0]
    if case == "another spec":
        desired = _changed_spec()
    elif case == "no digest":
        del live["metadata"]["annotations"]["ftspec.dev/applied-digest"]
    elif case == "value changed":
        live["spec"]["suspend"] = True
    elif case == "list item changed":
        trainer["args"] = ["a", "c"]
    elif case == "list grew":
        trainer["env"].append({"name": "Y", "value": "2"})
    elif case == "int became float":
        trainer["numNodes"] = 1.0
    elif case == "bool became int":
        live["spec"]["suspend"] = 0
    elif case == "another manager":
        live["metadata"]["managedFields"].append(
            {"manager": "kubectl-edit", "operation": "Update",
             "fieldsV1": {"f:metadata": {"f:labels": {"f:x": {}}}}})
    elif case == "an Update by ftspec":
        owned["operation"] = "Update"
    elif case == "a field ftspec no longer sets":
        owned["fieldsV1"]["f:spec"]["f:podTemplateOverrides"] = {}
    elif case == "a field set under ftspec's name":
        owned["fieldsV1"]["f:metadata"]["f:labels"]["f:extra"] = {}
        live["metadata"]["labels"]["extra"] = "1"
    assert not unchanged_since_applied(live, desired)


class _CountingRules:
    """Stands for the live CRDs' rules: counts the objects it is asked to check."""

    def __init__(self) -> None:
        self.checked: list[dict[str, Any]] = []

    def violations(self, obj: dict[str, Any], live: dict[str, Any] | None) -> tuple[list, list]:
        self.checked.append(obj)
        return [], []


@pytest.mark.parametrize("unchanged", [True, False])
def test_the_crd_rules_are_checked_only_for_an_object_apply_would_write(unchanged: bool) -> None:
    """An object unchanged since ftspec applied it is not written again, so its CRD's rules
    (CEL: building its parser is a second of a plan's time) have nothing to refuse; any
    other object is checked."""
    from concurrent.futures import Future
    from types import SimpleNamespace

    from ftspec.reconciler.kubernetes.plan_steps import Context, Pending, read_server

    desired = DESIRED if unchanged else _changed_spec()
    live, dry = _live(), Future()
    dry.set_result(live)
    rules = _CountingRules()
    ctx = Context(reader=SimpleNamespace(), rules=rules,  # type: ignore[arg-type]
                  by_addr={"a": live}, taken=set(), version=None)
    read = read_server(ctx, Pending(SimpleNamespace(), desired, "a",  # type: ignore[arg-type]
                                    None, dry))
    assert read.live is live
    assert rules.checked == ([] if unchanged else [desired])
