"""Run the ftspec CLI in-process against a test cluster and capture what it printed."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def use_cluster(monkeypatch: pytest.MonkeyPatch, cluster: Any) -> None:
    """Point the CLI at the test cluster as its admin, without colour."""
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig_path))
    monkeypatch.setenv("FTSPEC_KUBE_CONTEXT", "admin")
    monkeypatch.setenv("NO_COLOR", "1")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    from ftspec.cli.main import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)


def spec_copy(tmp_path: Path, name: str = "job.yaml", replace: dict[str, str] | None = None
              ) -> Path:
    """The kubeflow example copied to ``tmp_path/name`` with text replacements."""
    text = EXAMPLE.read_text(encoding="utf-8")
    for old, new in (replace or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def prepare_namespace(cluster: Any, namespace: str) -> None:
    """What the example spec references: the hf-token secret, the ft-outputs claim."""
    cluster.request("POST", f"/api/v1/namespaces/{namespace}/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token"},
        "stringData": {"token": "dummy"}})
    cluster.request("POST", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "ft-outputs"},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}})


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)


def reconcile_env(cluster: Any, namespace: str, monkeypatch: pytest.MonkeyPatch,
                  tmp_path: Path) -> dict[str, Any]:
    """A namespace ready for the example spec, the CLI pointed at ``cluster`` with few
    retries, and a copy of the spec: what the plan/apply tests start from."""
    use_cluster(monkeypatch, cluster)
    monkeypatch.setenv("FTSPEC_KUBE_RETRIES", "2")
    prepare_namespace(cluster, namespace)
    return {"cluster": cluster, "ns": namespace, "spec": spec_copy(tmp_path), "tmp": tmp_path}
