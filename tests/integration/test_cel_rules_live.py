"""The CRDs' CEL rules on the real API server: every write the suite makes passes the harness's
CEL webhook (``harness.cel_webhook``), so the 1.20 server refuses what a modern one refuses.

Each case of ``helpers.cel_cases`` is written as a test would write it: the object that breaks
a rule is created (or, for a transition rule, the valid object is created and then replaced by
the breaking one) and the server answers 422 naming the rule's message and field. The TrainJob
cases run on the default (master) CRD and again on v2.1.0's.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from harness.kube import KubeApiError, KubeCluster
from helpers.cel_cases import CASES, CLUSTER_RUNTIME, TRAINJOB, RuleCase, base_object, merge

pytestmark = pytest.mark.kube
WEBHOOK = 'admission webhook "cel-rules.ftspec.dev" denied the request'


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
    assert WEBHOOK in text, text
    assert f"{case.field}: Invalid value: " in text and case.message in text, text


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
