"""An API server that throttles: priority-and-fairness flags, a priority level that refuses
(429 + Retry-After) what it cannot admit at once, the ``limited`` user's grants, many specs.
Shared by ``bench/kube_load.py`` and ``tests/integration/test_kube_load.py``."""

from __future__ import annotations

import re
import ssl
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"


def throttled_flags(inflight: int, mutating: int) -> list[str]:
    return ["--enable-priority-and-fairness=true", f"--max-requests-inflight={inflight}",
            f"--max-mutating-requests-inflight={mutating}"]


def grant_limited(cluster: Any, namespace: str) -> None:
    """What plan and apply need, for the ``limited`` user (admins skip priority and fairness)."""
    from helpers.kubecli import prepare_namespace

    cluster.create_namespace(namespace)
    prepare_namespace(cluster, namespace)  # the secret and the claim the example names
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    cluster.request("POST", f"{rbac}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "ftspec-load"},
        "rules": [
            {"apiGroups": ["trainer.kubeflow.org", "ray.io", "coordination.k8s.io", ""],
             "resources": ["*"], "verbs": ["*"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
             "verbs": ["get"]}]})
    cluster.request("POST", f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "ftspec-load"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "ftspec-load"},
        "subjects": [{"kind": "User", "name": "limited", "apiGroup": "rbac.authorization.k8s.io"}]})


def throttle_user(cluster: Any, user: str = "limited") -> None:
    """A priority level for ``user`` alone with the least concurrency and no queue
    (``limitResponse: Reject``): what it cannot admit at once it answers 429 with
    ``Retry-After``, as a busy production server does (``flowcontrol.apiserver.k8s.io/v1``)."""
    api = "/apis/flowcontrol.apiserver.k8s.io/v1"
    version = "flowcontrol.apiserver.k8s.io/v1"
    cluster.request("POST", f"{api}/prioritylevelconfigurations", {
        "apiVersion": version, "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "ftspec-load"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
                                                "limitResponse": {"type": "Reject"}}}})
    cluster.request("POST", f"{api}/flowschemas", {
        "apiVersion": version, "kind": "FlowSchema", "metadata": {"name": "ftspec-load"},
        "spec": {"matchingPrecedence": 500,
                 "priorityLevelConfiguration": {"name": "ftspec-load"},
                 "distinguisherMethod": {"type": "ByUser"},
                 "rules": [{"subjects": [{"kind": "User", "user": {"name": user}}],
                            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                               "resources": ["*"], "namespaces": ["*"],
                                               "clusterScope": True}],
                            "nonResourceRules": [{"verbs": ["*"],
                                                  "nonResourceURLs": ["*"]}]}]}})
    time.sleep(2)  # the server's flow-control configuration controller picks them up


def write_specs(folder: Path, count: int, prefix: str = "load") -> list[Path]:
    text = EXAMPLE.read_text(encoding="utf-8")
    name = re.search(r"^  name: (\S+)", text, re.MULTILINE)
    assert name is not None, "the example names its job under metadata.name"
    out = []
    for i in range(count):
        path = folder / f"{prefix}-{i:03d}.yaml"
        path.write_text(text.replace(f"  name: {name.group(1)} ", f"  name: {prefix}-{i:03d} ",
                                     1))
        out.append(path)
    return out


def rejected_429(cluster: Any) -> int:
    """Requests the server refused with 429: priority and fairness rejections
    (``apiserver_flowcontrol_rejected_requests_total``) plus ``apiserver_request_total``
    with code 429, summed over every label set."""
    text = _metrics(cluster)
    total = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_flowcontrol_rejected_requests_total{") or (
                line.startswith("apiserver_request_total{") and 'code="429"' in line):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def _metrics(cluster: Any) -> str:
    ctx = ssl.create_default_context(cafile=str(cluster.ca_path))
    req = urllib.request.Request(cluster.server + "/metrics",
                                 headers={"Authorization": f"Bearer {cluster.token('admin')}"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        return str(resp.read().decode())
