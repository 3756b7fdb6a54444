"""Plan-time preflight on a real kube-apiserver: the objects a spec references (secret,
claim, runtime) must exist; each missing one is an error at the spec field that names it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import prepare_namespace, run_cli, spec_copy

pytestmark = pytest.mark.kube


@pytest.fixture
def env(kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig_path))
    monkeypatch.setenv("FTSPEC_KUBE_CONTEXT", "admin")
    monkeypatch.setenv("NO_COLOR", "1")
    return kube_cluster


def test_missing_secret_claim_and_runtime_are_errors_at_their_fields(
        env: Any, kube_namespace: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    spec = spec_copy(tmp_path, replace={"name: torchtune-llama3.2-1b": "name: no-such-runtime"})
    res = run_cli(capsys, "plan", spec, "-n", kube_namespace)
    assert res.code == 1, res.out + res.err
    assert res.out == ""
    errors = [line for line in res.err.splitlines() if ": error: " in line]
    missing = "does not exist in the cluster"
    assert errors == [
        f"{spec}:59:8: error: output.uri: persistentvolumeclaim {kube_namespace}/ft-outputs "
        + missing,
        f"{spec}:65:5: error: deploy.kubeflow.runtime: ClusterTrainingRuntime no-such-runtime "
        + missing,
        f"{spec}:68:3: error: secrets.hf_token: secret {kube_namespace}/hf-token " + missing,
    ], res.err
    assert "hint: create the secret or fix the secrets: section of the spec" in res.err

    prepare_namespace(env, kube_namespace)  # the secret and the claim
    fixed = spec_copy(tmp_path, "ok.yaml")
    ok = run_cli(capsys, "plan", fixed, "-n", kube_namespace)
    assert ok.code == 0, ok.err
    assert "will be created" in ok.out


def test_a_name_too_long_for_a_runtime_only_the_cluster_knows_is_an_error_at_plan(
        env: Any, kube_namespace: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """validate cannot know the replicated jobs of a runtime that is not an upstream one:
    plan reads it from the cluster and checks the TrainJob's name against the pod names
    JobSet would derive (``<name>-<job>-0-0-#####``, 63 characters at most)."""
    job = "a-replicated-job-named-at-length-35"
    assert len(job) == 35
    name = "rt-" + hashlib.sha256(kube_namespace.encode()).hexdigest()[:10]  # cluster-wide
    env.request("POST", "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"replicatedJobs": [{
            "name": job, "replicas": 1,
            "template": {"spec": {"template": {"spec": {"containers": [
                {"name": "node", "image": "busybox"}]}}}}}]}}}})
    prepare_namespace(env, kube_namespace)
    spec = spec_copy(tmp_path, replace={"name: torchtune-llama3.2-1b": f"name: {name}"})
    res = run_cli(capsys, "plan", spec, "-n", kube_namespace)
    limit = 63 - len(f"-{job}-0-0") - 6
    assert res.code == 1, res.out + res.err
    assert (f"{spec}:12:9: error: metadata.name: a TrainJob name may have at most {limit} "
            f"characters here (this one, 'llama32-1b-alpaca-lora', has 22)") in res.err, res.err

    short = spec_copy(tmp_path, "short.yaml", replace={
        "name: torchtune-llama3.2-1b": f"name: {name}",
        "name: llama32-1b-alpaca-lora ": "name: llama-a "})
    ok = run_cli(capsys, "plan", short, "-n", kube_namespace)
    assert ok.code == 0, ok.err
