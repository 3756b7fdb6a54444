"""Kubeconfig users the official client serves (``exec`` credential plugins), against the
real kube-apiserver: the token a plugin prints authenticates ``plan`` and ``apply``."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import prepare_namespace, run_cli, spec_copy

pytestmark = pytest.mark.kube


def _exec_kubeconfig(cluster: Any, tmp_path: Path, token: str) -> Path:
    plugin = tmp_path / "credential-plugin"
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1",
                  "kind": "ExecCredential", "status": {"token": token}}
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(credential))})\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    ca = cluster.kubeconfig_path.parent / "ca.crt"
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": cluster.server,
                                               "certificate-authority": str(ca)}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin),
            "interactiveMode": "Never"}}}]}))
    return config


def test_exec_plugin_user_plans_and_applies(kube_cluster: Any, kube_namespace: str,
                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    prepare_namespace(kube_cluster, kube_namespace)
    config = _exec_kubeconfig(kube_cluster, tmp_path, kube_cluster.token("admin"))
    monkeypatch.setenv("KUBECONFIG", str(config))
    monkeypatch.delenv("FTSPEC_KUBE_CONTEXT", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    spec = spec_copy(tmp_path)
    planned = run_cli(capsys, "plan", spec, "-n", kube_namespace, "--detailed-exitcode")
    assert planned.code == 2, planned.out + planned.err
    assert "will be created" in planned.out
    applied = run_cli(capsys, "apply", spec, "-n", kube_namespace, "--auto-approve")
    assert applied.code == 0, applied.out + applied.err
    again = run_cli(capsys, "plan", spec, "-n", kube_namespace, "--detailed-exitcode")
    assert again.code == 0, again.out + again.err


def test_exec_plugin_with_a_wrong_token_is_refused_not_retried(
        kube_cluster: Any, kube_namespace: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    config = _exec_kubeconfig(kube_cluster, tmp_path, "not-a-valid-token")
    monkeypatch.setenv("KUBECONFIG", str(config))
    monkeypatch.delenv("FTSPEC_KUBE_CONTEXT", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    planned = run_cli(capsys, "plan", spec_copy(tmp_path), "-n", kube_namespace)
    assert planned.code == 1
    text = planned.out + planned.err
    assert "internal error" not in text and "not-a-valid-token" not in text, text
    assert "401" in text or "Unauthorized" in text or "unauthorized" in text.lower(), text
