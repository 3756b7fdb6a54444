"""A plan reads the Trainer API the cluster serves from the TrainJob CRD once per CRD, on a
real kube-apiserver (``reconciler.kubernetes.trainer_api``): later plans ask for the CRD's
metadata alone and render the same objects, a write to the CRD reads it whole again, and a
changed object is still checked against the whole CRD's rules."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler.kubernetes.reads import Reader
from helpers.kubecli import prepare_namespace, run_cli, spec_copy, use_cluster

pytestmark = pytest.mark.kube
CRD = "trainjobs.trainer.kubeflow.org"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each plan asked for the whole CRD and for its metadata alone."""
    counts: Counter[str] = Counter()
    whole, metadata = Reader.crd, Reader.crd_metadata

    def crd(self: Reader, name: str) -> dict[str, Any] | None:
        counts["whole " + name] += 1
        return whole(self, name)

    def crd_metadata(self: Reader, name: str) -> dict[str, Any] | None:
        counts["metadata " + name] += 1
        return metadata(self, name)

    monkeypatch.setattr(Reader, "crd", crd)
    monkeypatch.setattr(Reader, "crd_metadata", crd_metadata)
    return counts


def test_the_trainer_api_is_read_whole_once_per_crd(
        kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path, capsys: pytest.CaptureFixture[str], reads: Counter[str]) -> None:
    use_cluster(monkeypatch, kube_cluster)
    monkeypatch.setenv("FTSPEC_COMPILE_CACHE", "on")
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    prepare_namespace(kube_cluster, kube_namespace)
    spec = str(spec_copy(tmp_path))
    ns = ("-n", kube_namespace)

    def plan(*extra: str) -> dict[str, Any]:
        reads.clear()
        res = run_cli(capsys, "plan", spec, *ns, "--json", *extra)
        assert res.code == 0, res.out + res.err
        out = json.loads(res.out)
        return {key: out[key] for key in ("changes", "warnings")}  # less when it was made

    applied = run_cli(capsys, "apply", spec, *ns, "--auto-approve")
    assert applied.code == 0, applied.out + applied.err
    kept = plan()
    assert reads == {f"metadata {CRD}": 1}  # the answer the apply kept for this CRD
    assert [c["action"] for c in kept["changes"]] == ["no-op"]

    # a changed object is checked against the whole CRD's rules, read then
    changed = plan("--set", "metadata.labels.team=cv")
    assert reads == {f"metadata {CRD}": 1, f"whole {CRD}": 1}
    # (the label reaches the runtime patch, which the Trainer keeps immutable: a replace)
    assert [c["action"] for c in changed["changes"]] == ["replace"]

    # a write to the CRD gives it a new resourceVersion: read whole again, then kept
    kube_cluster.request(
        "PATCH", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}",
        {"metadata": {"annotations": {"ftspec.test/touched": tmp_path.name}}},
        content_type="application/merge-patch+json")
    assert plan() == kept
    assert reads == {f"metadata {CRD}": 1, f"whole {CRD}": 1}
    assert plan() == kept
    assert reads == {f"metadata {CRD}": 1}

    # with the cache off, the whole CRD is read at once, and the plan is the same
    monkeypatch.setenv("FTSPEC_COMPILE_CACHE", "off")
    assert plan() == kept
    assert reads == {f"whole {CRD}": 1}
