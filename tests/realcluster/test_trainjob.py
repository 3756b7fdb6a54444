"""TrainJobs ftspec compiles, reconciled by the real Kubeflow Trainer, JobSet, Job controller and kwok.

Each Kubeflow example is planned (a server-side dry run through the Trainer's real webhooks),
applied, turned by the Trainer into a JobSet, by JobSet into Jobs, by the Job controller into
Pods that kwok runs; ``ftspec status --watch`` follows the real conditions to the end. The pods
the controllers render are compared with what ftspec compiled.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from ftspec.targets.kubeflow_torchtune import controller_command, controller_recipe
from helpers.kubecli import REPO, run_cli

from realcluster.objects import container, env_map, gpu_limit
from realcluster.prepare import applied_example, status_row

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(600)]

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
JOBSET = "/apis/jobset.x-k8s.io/v1alpha2"


def kubeflow_examples() -> list[Path]:
    found = []
    for path in sorted((REPO / "examples").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if "\n  target: kubeflow" in text and "\nsweep:" not in text:
            found.append(path)
    return found


def pods_of(cluster: Any, ns: str, jobset: str) -> list[dict[str, Any]]:
    selector = f"jobset.sigs.k8s.io/jobset-name={jobset}"
    return list(cluster.request("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"])


@pytest.mark.parametrize("example", kubeflow_examples(), ids=lambda p: p.stem)
def test_example_runs_to_succeeded(example: Path, real_env: dict[str, Any],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    cluster, ns = real_env["cluster"], real_env["ns"]
    spec, trainjob = applied_example(capsys, real_env, example, "kubeflow")
    name = trainjob["metadata"]["name"]
    jobset = cluster.wait_for(f"the Trainer's JobSet {name}",
                              lambda: cluster.request("GET", f"{JOBSET}/namespaces/{ns}/jobsets")["items"])
    assert [j["metadata"]["name"] for j in jobset] == [name]
    owner = jobset[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("TrainJob", name)
    final = status_row(capsys, spec, ns, "--watch")
    assert final["phase"] == "Succeeded", final
    live = cluster.request("GET", f"{TRAINER}/namespaces/{ns}/trainjobs/{name}")
    complete = [c for c in live["status"]["conditions"] if c["type"] == "Complete"]
    assert complete and complete[0]["status"] == "True", live["status"]
    assert pods_of(cluster, ns, name), "the controllers rendered no pods"


def test_rendered_pods_match_the_compiled_trainjob(real_env: dict[str, Any],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Nodes, processes per node, command and arguments, GPUs, output volume and path, environment."""
    cluster, ns = real_env["cluster"], real_env["ns"]
    example = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
    spec, trainjob = applied_example(capsys, real_env, example, "kubeflow")
    name = trainjob["metadata"]["name"]
    trainer = trainjob["spec"]["trainer"]

    def node_pods() -> list[dict[str, Any]]:
        pods = [p for p in pods_of(cluster, ns, name)
                if p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name") == "node"]
        return pods if len(pods) >= int(trainer["numNodes"]) else []

    pods = cluster.wait_for("the trainer node pods", node_pods, timeout=120)
    assert len(pods) == int(trainer["numNodes"])
    runtime = cluster.request("GET", f"{TRAINER}/clustertrainingruntimes/{trainjob['spec']['runtimeRef']['name']}")
    gpus = gpu_limit(trainer["resourcesPerNode"])
    predicted = controller_command(trainjob, runtime, gpus)
    local = run_cli(capsys, "compile", spec, "--target", "torchtune")
    launch = re.search(r"tune run .*? (\S+) --config (\S+)", local.out)
    assert launch is not None, local.out
    assert controller_recipe(trainjob, gpus) == (launch.group(1), launch.group(2)), \
        "the Trainer picks another recipe or config than ftspec's torchtune launcher"
    for pod in pods:
        node = container(pod, "node")
        assert node["command"] == predicted
        assert node["args"] == trainer["args"]
        assert gpu_limit(node["resources"]) == gpu_limit(trainer["resourcesPerNode"])
        env = env_map(node)
        assert env.get("PET_NNODES") == str(trainer["numNodes"])
        assert env.get("PET_NPROC_PER_NODE") == str(trainer["numProcPerNode"])
        for entry in trainer.get("env") or []:  # ftspec's env, secrets by reference
            assert env[entry["name"]] == entry.get("value", entry.get("valueFrom"))
        patch = trainjob["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]
        (node_patch,) = [r for r in patch["replicatedJobs"] if r["name"] == "node"]
        pod_patch = node_patch["template"]["spec"]["template"]["spec"]
        for key, value in (pod_patch.get("nodeSelector") or {}).items():
            assert pod["spec"]["nodeSelector"][key] == value
        mounts = {m["name"]: m for m in node.get("volumeMounts") or []}
        (want_mount,) = pod_patch["containers"][0]["volumeMounts"]
        assert mounts[want_mount["name"]]["mountPath"] == want_mount["mountPath"]
        assert mounts[want_mount["name"]].get("subPath") == want_mount.get("subPath")
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes[want_mount["name"]]["persistentVolumeClaim"]["claimName"] == \
            pod_patch["volumes"][0]["persistentVolumeClaim"]["claimName"]
    initializers = {p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]: p
                    for p in pods_of(cluster, ns, name)}
    for step in ("dataset", "model"):
        pod = initializers.get(f"{step}-initializer")
        if pod is None:
            continue  # already completed and cleaned up by kwok
        env = env_map(container(pod, f"{step}-initializer"))
        wanted = trainjob["spec"]["initializer"][step]
        assert env["STORAGE_URI"] == wanted["storageUri"]
        for entry in wanted.get("env") or []:
            assert env[entry["name"]] == entry.get("valueFrom", entry.get("value"))
    assert status_row(capsys, spec, ns, "--watch")["phase"] == "Succeeded"


def node_backoff_limit(cluster: Any, runtime: str, limit: int | None) -> int | None:
    """Set the trainer job's backoffLimit in a ClusterTrainingRuntime (None: remove it); returns the old one."""
    path = f"{TRAINER}/clustertrainingruntimes/{runtime}"
    jobs = cluster.request("GET", path)["spec"]["template"]["spec"]["replicatedJobs"]
    index = next(i for i, j in enumerate(jobs) if j["name"] == "node")
    old = jobs[index]["template"]["spec"].get("backoffLimit")
    where = f"/spec/template/spec/replicatedJobs/{index}/template/spec/backoffLimit"
    op = {"op": "remove", "path": where} if limit is None else {"op": "add", "path": where, "value": limit}
    if limit is not None or old is not None:
        cluster.request("PATCH", path, [op], content_type="application/json-patch+json")
    return old if isinstance(old, int) else None


@pytest.mark.parametrize(("exit_code", "reason"), [(1, "Error"), (137, "OOMKilled")])
def test_failing_pod_reason_in_status_and_list(exit_code: int, reason: str, real_env: dict[str, Any],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A trainer pod that ends badly: with no retries left (backoffLimit 0 in the runtime, so the
    test does not wait out the Job controller's back-off) the real conditions say Failed, and
    status and list give the pod's reason."""
    cluster, ns = real_env["cluster"], real_env["ns"]
    example = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
    name = "llama32-1b-alpaca-lora"
    stage = cluster.fail_pods(f"fail-{exit_code}-{ns}", {"job-name": f"{name}-node-0"},
        exit_code=exit_code, reason=reason)
    old = node_backoff_limit(cluster, "torchtune-llama3.2-1b", 0)
    try:
        spec, _trainjob = applied_example(capsys, real_env, example, "kubeflow")
        final = status_row(capsys, spec, ns, "--watch")
        assert final["phase"] == "Failed", final
        text = json.dumps(final["reason"])
        assert reason in text and str(exit_code) in text, text
        rows = run_cli(capsys, "list", spec, "-n", ns, "--json")
        assert rows.code == 0, rows.err
        (row,) = [r for r in json.loads(rows.out) if r["name"] == name]
        assert row["phase"] == "Failed"
    finally:
        node_backoff_limit(cluster, "torchtune-llama3.2-1b", old)
        cluster.remove_stage(stage)


def test_retried_pod_failure_is_shown_while_the_job_retries(real_env: dict[str, Any],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The runtime's default back-off: the Job controller recreates an OOMKilled trainer pod for
    minutes; status says so meanwhile instead of 'no trainer pods active yet'."""
    cluster, ns = real_env["cluster"], real_env["ns"]
    example = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
    name = "llama32-1b-alpaca-lora"
    stage = cluster.fail_pods(f"oom-retry-{ns}", {"job-name": f"{name}-node-0"},
        exit_code=137, reason="OOMKilled")
    try:
        spec, _trainjob = applied_example(capsys, real_env, example, "kubeflow")

        def oom_pod() -> bool:
            return any((s.get("state") or {}).get("terminated", {}).get("reason") == "OOMKilled"
                       for p in pods_of(cluster, ns, name) for s in p["status"].get("containerStatuses") or [])

        cluster.wait_for("an OOMKilled trainer pod", oom_pod, timeout=120)
        row = status_row(capsys, spec, ns)
        assert row["phase"] in ("Pending", "Running"), row
        assert "OOMKilled (exit code 137)" in row["message"], row
        assert "retried by the Job controller" in row["message"], row
    finally:
        cluster.remove_stage(stage)
