"""A sweep on a real kube-apiserver: one TrainJob per point, a value added to the grid
plans one create beside no-ops, destroy deletes every point's TrainJob."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers.kubecli import reconcile_env, run_cli

pytestmark = pytest.mark.kube

GRID = "sweep:\n  grid:\n    training.learning_rate: {values}\n"


def test_each_point_is_a_trainjob_and_the_grid_grows_by_one(
        kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    env = reconcile_env(kube_cluster, kube_namespace, monkeypatch, tmp_path)
    ns, spec = env["ns"], env["spec"]
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text + GRID.format(values="[1.0e-4, 2.0e-4]"), encoding="utf-8")
    applied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert applied.code == 0, applied.out + applied.err
    assert "Apply complete! Resources: 2 added, 0 changed, 0 destroyed." in applied.out

    def trainjobs() -> dict[str, dict[str, Any]]:
        listed = kube_cluster.request(
            "GET", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs")
        return {j["metadata"]["name"]: j for j in listed.get("items") or []}

    jobs = trainjobs()
    assert sorted(jobs) == ["llama32-1b-alpaca-lora-lr-1e-4", "llama32-1b-alpaca-lora-lr-2e-4"]
    assert sorted(j["metadata"]["labels"]["ftspec.dev/spec-id"] for j in jobs.values()) == [
        "job-lr-1e-4", "job-lr-2e-4"]

    spec.write_text(text + GRID.format(values="[1.0e-4, 2.0e-4, 5.0e-5]"), encoding="utf-8")
    res = run_cli(capsys, "plan", spec, "-n", ns, "--json")
    assert res.code == 0, res.err
    actions = sorted((c["action"], c["address"].rsplit("/", 1)[-1])
                     for c in json.loads(res.out)["changes"])
    assert actions == [("create", "llama32-1b-alpaca-lora-lr-5e-5"),
                       ("no-op", "llama32-1b-alpaca-lora-lr-1e-4"),
                       ("no-op", "llama32-1b-alpaca-lora-lr-2e-4")], actions

    gone = run_cli(capsys, "destroy", spec, "-n", ns, "--auto-approve")
    assert gone.code == 0, gone.out + gone.err
    assert trainjobs() == {}
