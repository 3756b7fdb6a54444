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
    from ftspec.reconciler.kubernetes.reads import Applying

    desired = DESIRED if unchanged else _changed_spec()
    live, dry, verdict = _live(), Future(), Future()
    dry.set_result(live)
    verdict.set_result(unchanged_since_applied(live, desired))
    rules = _CountingRules()
    ctx = Context(reader=SimpleNamespace(), rules=rules,  # type: ignore[arg-type]
                  by_addr={"a": live}, taken=set(), version=None)
    read = read_server(ctx, Pending(SimpleNamespace(), desired, "a",  # type: ignore[arg-type]
                                    None, Applying(verdict, dry)))
    assert read.live is live
    assert rules.checked == ([] if unchanged else [desired])


class _Server:
    """Stands for the API server behind a ``Reader``: lists ``live``, answers a dry-run
    with the object sent; records each request."""

    def __init__(self, live: dict[str, Any]) -> None:
        self.live = live
        self.requests: list[str] = []

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> dict[str, Any]:
        self.requests.append(method)
        if method == "GET":
            return {"items": [json.loads(json.dumps(self.live))]}
        return dict(json.loads(body))


@pytest.mark.parametrize("early", [False, True], ids=["read by the plan", "read early"])
@pytest.mark.parametrize("unchanged", [True, False], ids=["unchanged", "changed"])
def test_whether_an_object_is_unchanged_is_decided_once(
        monkeypatch: pytest.MonkeyPatch, unchanged: bool, early: bool) -> None:
    """The one verdict skips both the server's dry-run and the CRD's rules (before, the
    reads and the plan step each computed it)."""
    from types import SimpleNamespace

    from ftspec.reconciler.kubernetes import plan_steps, reads
    from ftspec.reconciler.kubernetes.plan_steps import Context, read_server, submit_reads
    from ftspec.reconciler.kubernetes.planner import address

    verdicts: list[bool] = []

    def counted(live: dict[str, Any], desired: dict[str, Any]) -> bool:
        verdicts.append(unchanged_since_applied(live, desired))
        return verdicts[-1]

    for module in (reads, plan_steps):
        monkeypatch.setattr(module, "unchanged_since_applied", counted, raising=False)
    server = _Server(_live())
    desired = DESIRED if unchanged else _changed_spec()
    reader = reads.Reader(server)  # type: ignore[arg-type]
    ahead = reads.Early(server) if early else None  # type: ignore[arg-type]
    try:
        if ahead is not None:  # as the prefetch starts them: the list, then the dry-run
            ahead.owned("TrainJob", "ml")
            ahead.dry_run(desired)
            listed = ahead.take_owned("TrainJob", "ml")
            assert listed is not None
            live = listed.result()[0]
        else:
            live = reader.owned("TrainJob", "ml")[0]
        job = SimpleNamespace(job=SimpleNamespace(target="kubeflow"))
        by_addr = {address("kubeflow", live): live}
        pending = submit_reads(reader, ahead, [(job, desired)], by_addr)  # type: ignore[list-item]
        rules = _CountingRules()
        ctx = Context(reader, rules, by_addr, set(), None,  # type: ignore[arg-type]
                      {p.addr: p for p in pending})
        read = read_server(ctx, pending[0])
    finally:
        reader.close()
        if ahead is not None:
            ahead.close()
    assert verdicts == [unchanged]
    assert server.requests == (["GET"] if unchanged else ["GET", "PATCH"])
    assert rules.checked == ([] if unchanged else [desired])
    assert (read.dry is live) == unchanged
