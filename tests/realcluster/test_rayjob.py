"""RayJobs ftspec compiles, reconciled by the real KubeRay operator, Job controller and kwok.

KubeRay creates the RayCluster and, once its pods run, the submitter Job (``K8sJobMode``). What
no test here can show: the Ray job's own status, which KubeRay reads from the head's dashboard at
its in-cluster service address (kwok's pods serve nothing), so a RayJob reaches ``Running`` and
never ``Complete`` here; a failing submitter is followed to ``Failed`` through the real operator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import REPO

from realcluster.prepare import applied_example, status_row

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(600)]

RAY = "/apis/ray.io/v1"


def kuberay_examples() -> list[Path]:
    return [p for p in sorted((REPO / "examples").glob("*.yaml"))
            if "\n  target: kuberay" in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("example", kuberay_examples(), ids=lambda p: p.stem)
def test_rayjob_cluster_and_submitter(example: Path, real_env: dict[str, Any],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    cluster, ns = real_env["cluster"], real_env["ns"]
    spec, rayjob = applied_example(capsys, real_env, example, "kuberay")
    name = rayjob["metadata"]["name"]
    def with_cluster() -> dict[str, Any] | None:
        # KubeRay writes status.rayClusterName (Initializing) before it creates the cluster
        status = cluster.request("GET", f"{RAY}/namespaces/{ns}/rayjobs/{name}").get("status")
        cluster_name = (status or {}).get("rayClusterName")
        path = f"{RAY}/namespaces/{ns}/rayclusters/{cluster_name}"
        return cluster.request("GET", path) if cluster_name and cluster._exists(path) else None

    ray_cluster = cluster.wait_for("KubeRay's RayCluster for the RayJob", with_cluster,
                                   timeout=120)
    wanted = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert [g["groupName"] for g in ray_cluster["spec"]["workerGroupSpecs"]] == [g["groupName"] for g in wanted]
    submitter = cluster.wait_for(
        "the submitter Job", lambda: cluster._exists(f"/apis/batch/v1/namespaces/{ns}/jobs/{name}"), timeout=180)
    assert submitter
    job = cluster.request("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
    command = " ".join(job["spec"]["template"]["spec"]["containers"][0].get("command") or [])
    command += " " + " ".join(job["spec"]["template"]["spec"]["containers"][0].get("args") or [])
    assert rayjob["spec"]["entrypoint"] in command, command
    row = status_row(capsys, spec, ns)
    assert row["phase"] in ("Running", "Pending"), row


def test_rayjob_submission_failure_reason(real_env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, ns = real_env["cluster"], real_env["ns"]
    example = REPO / "examples" / "sfttrainer-ray-2x8-roce.yaml"
    name = "granite-8b-fsdp-ray-2x8"
    stage = cluster.fail_pods(f"fail-submit-{ns}", {"job-name": name}, exit_code=1, reason="Error")
    try:
        spec, _ = applied_example(capsys, real_env, example, "kuberay")
        final = status_row(capsys, spec, ns, "--watch")
        assert final["phase"] == "Failed", final
        assert "SubmissionFailed" in json.dumps(final), final
    finally:
        cluster.remove_stage(stage)
