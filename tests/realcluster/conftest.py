"""What the real-controller tests share: a namespace ready for the Kubeflow example, the CLI on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import prepare_namespace, use_cluster


@pytest.fixture
def real_env(real_cluster: Any, real_namespace: str, monkeypatch: pytest.MonkeyPatch,
             tmp_path: Path) -> dict[str, Any]:
    """The example's secret and claim in a fresh namespace (the harness's volume pool binds the claim);
    the CLI pointed at the cluster."""
    use_cluster(monkeypatch, real_cluster)
    monkeypatch.setenv("FTSPEC_KUBE_RETRIES", "2")
    monkeypatch.chdir(tmp_path)
    prepare_namespace(real_cluster, real_namespace)
    return {"cluster": real_cluster, "ns": real_namespace, "tmp": tmp_path}
