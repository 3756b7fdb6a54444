"""The CRDs' CEL rules on the real API server, which enforces them itself (the CRDs are installed
verbatim), against ``helpers.cel_cases``: the cases ftspec's own evaluator
(``ftspec.compiler.crd_rules``, used by ``validate`` without a cluster) is held to.

Each case is written as a test would write it: the object that breaks a rule is created (or,
for a transition rule, the valid object is created and then replaced by the breaking one) and
the server answers 422 naming the rule's message and field. The TrainJob cases run on the
default (pinned) CRD and again on v2.1.0's.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from harness.kube import KubeApiError, KubeCluster
from helpers.cel_cases import CASES, CLUSTER_RUNTIME, TRAINJOB, RuleCase, base_object, merge

pytestmark = pytest.mark.kube


def _name(case: RuleCase, index: int) -> str:
    return f"cel-{index}-{re.sub(r'[^a-z0-9]', '', case.path.lower())[-20:] or 'root'}"


def _replace(cluster: KubeCluster, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    path = cluster.resource_path(obj["apiVersion"], obj["kind"], namespace=meta.get("namespace"),
                                 name=meta["name"])
    current = cluster.request("GET", path)
    cluster.request("PUT", path, {**obj, "metadata": {
        **meta, "resourceVersion": current["metadata"]["resourceVersion"]}})


def _refused(cluster: KubeCluster, case: RuleCase, index: int, namespace: str) -> str:
    base = base_object(case.crd, _name(case, index), namespace)
    after = merge(base, case.after)
    if case.after.get("metadata", {}).get("name"):
        after["metadata"]["name"] = case.after["metadata"]["name"]
    try:
        if case.before is None:
            cluster.create_object(after)
        else:
            cluster.create_object(merge(base, case.before))  # valid: accepted
            _replace(cluster, after)
    except KubeApiError as err:
        assert err.status == 422, err
        return str(err)
    finally:
        if case.crd == CLUSTER_RUNTIME:
            try:
                cluster.request("DELETE", cluster.resource_path(
                    base["apiVersion"], base["kind"], name=base["metadata"]["name"]))
            except KubeApiError:
                pass
    raise AssertionError(f"{case.id}: the server accepted the object that breaks the rule")


def _assert_refusal(text: str, case: RuleCase) -> None:
    assert "admission webhook" not in text, text  # the server's own CEL, no webhook in the path
    kind = {TRAINJOB: "TrainJob", CLUSTER_RUNTIME: "ClusterTrainingRuntime"}.get(case.crd)
    if kind is not None:
        assert f'{kind}.trainer.kubeflow.org "' in text and '" is invalid: ' in text, text
    assert f"{_server_field(case)}: Invalid value: " in text and case.message in text, text


def _server_field(case: RuleCase) -> str:
    """Where the server points: the rule's own place when the rule names no ``fieldPath``.
    ftspec's evaluator (``case.field``) narrows a rule on the root to the ``metadata.name`` it
    reads, and a rule on a list item to the item's field; the server says ``<nil>`` and the item."""
    if not case.path:
        return "<nil>"
    item = case.path.replace(".[]", "[0]")
    return item if case.field.startswith(f"{item}.") else case.field


MASTER = [pytest.param(i, case, id=case.id) for i, case in enumerate(CASES)
          if "master" in case.versions]


@pytest.mark.parametrize(("index", "case"), MASTER)
def test_server_refuses_what_the_rule_refuses(kube_cluster: KubeCluster, kube_namespace: str,
                                              index: int, case: RuleCase) -> None:
    _assert_refusal(_refused(kube_cluster, case, index, kube_namespace), case)


def test_valid_objects_are_accepted(kube_cluster: KubeCluster, kube_namespace: str) -> None:
    for crd in sorted({case.crd for case in CASES}):
        obj = base_object(crd, "cel-valid", kube_namespace)
        created = kube_cluster.create_object(obj)
        assert created["metadata"]["name"] == "cel-valid"
        if crd == CLUSTER_RUNTIME:
            kube_cluster.request("DELETE", kube_cluster.resource_path(
                obj["apiVersion"], obj["kind"], name="cel-valid"))


def test_v2_1_trainjob_rules(kube_cluster: KubeCluster, kube_namespace: str) -> None:
    cases = [(i, c) for i, c in enumerate(CASES) if c.crd == TRAINJOB and "v2.1.0" in c.versions]
    assert len(cases) == 5
    kube_cluster.reinstall_trainjob_crd("v2.1.0")
    try:
        for index, case in cases:
            _assert_refusal(_refused(kube_cluster, case, index, kube_namespace), case)
        # a rule only newer CRDs have is not enforced on v2.1.0
        obj = merge(base_object(TRAINJOB, "cel-old-api", kube_namespace),
                    {"spec": {"initializer": {"model": {"storageUri": "no-scheme"}}}})
        kube_cluster.create_object(obj)
    finally:
        kube_cluster.reinstall_trainjob_crd(None)
