"""plan against a server that enforces the CRDs' CEL rules (the harness's webhook): a spec that
breaks a rule is refused at its spec line; an immutable field's change is planned as a
replacement, with the server's defaults, although the server refuses to update it in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import reconcile_env, run_cli

pytestmark = pytest.mark.kube


@pytest.fixture
def env(kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> dict[str, Any]:
    return reconcile_env(kube_cluster, kube_namespace, monkeypatch, tmp_path)


def test_rule_broken_by_the_spec_is_refused_at_its_line(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    overlay = env["tmp"] / "managed.yaml"
    overlay.write_text("overrides:\n  trainjob:\n    spec:\n      managedBy: example.com/mine\n")
    res = run_cli(capsys, "plan", env["spec"], "-n", env["ns"], "-f", overlay)
    assert res.code == 1, res.out
    assert "ManagedBy must be trainer.kubeflow.org/trainjob-controller" in res.err, res.err
    assert f"at {overlay}:4:18 (overrides.trainjob.spec.managedBy)" in res.err, res.err


def test_immutable_change_is_a_replacement(env: dict[str, Any],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    ns, spec = env["ns"], env["spec"]
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    text = run_cli(capsys, "plan", spec, "-n", ns, "--set", "data.train.uri=hf://other/set")
    assert text.code == 0, text.err
    assert "spec.initializer forces replacement" in text.out, text.out
    assert "Plan: 1 to add, 0 to change, 1 to destroy." in text.out
