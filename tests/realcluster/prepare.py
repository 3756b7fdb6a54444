"""A user's namespace as a compiled spec expects it: the secrets, claims and service accounts it names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import run_cli

from realcluster.objects import (
    documents,
    referenced_claims,
    referenced_secrets,
    referenced_service_accounts,
)


def compiled(capsys: pytest.CaptureFixture[str], spec: Path, ns: str, target: str) -> list[dict[str, Any]]:
    res = run_cli(capsys, "compile", spec, "--target", target, "--set", f"metadata.namespace={ns}")
    assert res.code == 0, res.err
    return documents(res.out)


def _names(cluster: Any, path: str) -> set[str]:
    return {str(item["metadata"]["name"]) for item in cluster.request("GET", path)["items"]}


def prepare_references(cluster: Any, ns: str, objs: list[dict[str, Any]]) -> None:
    """Create what the objects reference and the namespace lacks (placeholder secret values)."""
    base = f"/api/v1/namespaces/{ns}"
    secrets = _names(cluster, f"{base}/secrets")
    for name, keys in referenced_secrets(objs).items():
        if name not in secrets:
            cluster.request("POST", f"{base}/secrets", {
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                "stringData": {key: "placeholder" for key in keys or {"token"}}})
    for claim in referenced_claims(objs) - _names(cluster, f"{base}/persistentvolumeclaims"):
        cluster.request("POST", f"{base}/persistentvolumeclaims", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}})
    for account in referenced_service_accounts(objs) - _names(cluster, f"{base}/serviceaccounts"):
        cluster.request("POST", f"{base}/serviceaccounts", {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}})


JOB_KINDS = {"kubeflow": "TrainJob", "kuberay": "RayJob"}


def applied_example(capsys: pytest.CaptureFixture[str], env: dict[str, Any], example: Path,
                    target: str, *, plan_first: bool = True) -> tuple[Path, dict[str, Any]]:
    """``example`` copied into the test's folder, what it references prepared, planned (a create,
    dry-run through the controllers' webhooks, never degraded) and applied; returns the copy and
    the compiled job object (TrainJob or RayJob)."""
    cluster, ns = env["cluster"], env["ns"]
    spec = env["tmp"] / example.name
    shutil.copy(example, spec)
    objs = compiled(capsys, spec, ns, target)
    prepare_references(cluster, ns, objs)
    if plan_first:
        plan = run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode")
        assert plan.code == 2, plan.out + plan.err
        assert "will be created" in plan.out
        assert "planned without server defaults" not in plan.out + plan.err
    applied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert applied.code == 0, applied.out + applied.err
    (job,) = [o for o in objs if o["kind"] == JOB_KINDS[target]]
    return spec, job


def status_row(capsys: pytest.CaptureFixture[str], spec: Path, ns: str, *extra: str) -> dict[str, Any]:
    """``ftspec status SPEC --json``'s one row."""
    res = run_cli(capsys, "status", spec, "-n", ns, "--json", *extra)
    assert res.code == 0, res.out + res.err
    (row,) = json.loads(res.out)
    return dict(row)
