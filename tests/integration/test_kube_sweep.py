"""A sweep on a real kube-apiserver: one TrainJob per point, a value added to the grid
plans one create beside no-ops, a value removed plans the delete of its point's TrainJob
(found by its sweep label), and destroy after the grid shrank deletes every point's
TrainJob, in the grid or not."""

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
    assert "Apply complete: 2 runs started." in applied.out

    def trainjobs() -> dict[str, dict[str, Any]]:
        listed = kube_cluster.request(
            "GET", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs")
        return {j["metadata"]["name"]: j for j in listed.get("items") or []}

    jobs = trainjobs()
    assert sorted(jobs) == ["llama32-1b-alpaca-lora-lr-1e-4", "llama32-1b-alpaca-lora-lr-2e-4"]
    assert sorted(j["metadata"]["labels"]["ftspec.dev/spec-id"] for j in jobs.values()) == [
        "llama32-1b-alpaca-lora-lr-1e-4", "llama32-1b-alpaca-lora-lr-2e-4"]

    spec.write_text(text + GRID.format(values="[1.0e-4, 2.0e-4, 5.0e-5]"), encoding="utf-8")
    res = run_cli(capsys, "plan", spec, "-n", ns, "--json")
    assert res.code == 0, res.err
    actions = sorted((c["action"], c["address"].rsplit("/", 1)[-1])
                     for c in json.loads(res.out)["changes"])
    assert actions == [("create", "llama32-1b-alpaca-lora-lr-5e-5"),
                       ("no-op", "llama32-1b-alpaca-lora-lr-1e-4"),
                       ("no-op", "llama32-1b-alpaca-lora-lr-2e-4")], actions

    grown = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert "Apply complete: 1 run started." in grown.out, grown.out + grown.err
    assert jobs["llama32-1b-alpaca-lora-lr-1e-4"]["metadata"]["labels"][
        "ftspec.dev/sweep"] == "llama32-1b-alpaca-lora"

    # a value removed from the grid: its point's TrainJob is found by the sweep label
    spec.write_text(text + GRID.format(values="[1.0e-4, 5.0e-5]"), encoding="utf-8")
    res = run_cli(capsys, "plan", spec, "-n", ns, "--json")
    assert res.code == 0, res.err
    actions = sorted((c["action"], c["address"].rsplit("/", 1)[-1])
                     for c in json.loads(res.out)["changes"])
    assert actions == [("delete", "llama32-1b-alpaca-lora-lr-2e-4"),
                       ("no-op", "llama32-1b-alpaca-lora-lr-1e-4"),
                       ("no-op", "llama32-1b-alpaca-lora-lr-5e-5")], actions
    human = run_cli(capsys, "plan", spec, "-n", ns)
    assert "Plan: 0 to add, 0 to change, 1 to destroy." in human.out, human.out
    assert "'llama32-1b-alpaca-lora-lr-2e-4' is not a point of the spec's sweep.grid now" in human.out, human.out
    shrunk = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert "Apply complete: 1 destroyed." in shrunk.out, shrunk.out + shrunk.err
    assert sorted(trainjobs()) == ["llama32-1b-alpaca-lora-lr-1e-4",
                                   "llama32-1b-alpaca-lora-lr-5e-5"]

    # destroy after the grid shrank again: every point of the spec that exists goes
    spec.write_text(text + GRID.format(values="[1.0e-4]"), encoding="utf-8")
    gone = run_cli(capsys, "destroy", spec, "-n", ns, "--auto-approve")
    assert gone.code == 0, gone.out + gone.err
    assert "Destroy complete! Resources: 2 destroyed." in gone.out, gone.out
    assert trainjobs() == {}
