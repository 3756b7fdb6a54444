"""`ftspec logs` on Kubernetes against a real kube-apiserver: pod selection and the end of
`--follow`.

Limit of this environment: no kubelet runs beside the test API server, so the log *text* of
a pod cannot be produced here. The pods are bound to a node that does not exist
(``spec.nodeName``), so `GET pods/NAME/log` is refused by the API server itself (an
unbound pod's log reads as empty). What is tested is what the API server does provide: which pods a
TrainJob's logs come from (`--selector` narrows them to one rank), and that `--follow` keeps
polling while the job runs and ends when the TrainJob's status says it has ended.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import prepare_namespace, run_cli, spec_copy

pytestmark = pytest.mark.kube

TJ = ("trainer.kubeflow.org/v1alpha1", "TrainJob")
NAME = "llama32-1b-alpaca-lora"
FTSPEC = str(Path(sys.executable).parent / "ftspec")


def _pod(name: str, jobset: str, index: int) -> dict[str, Any]:
    labels = {"jobset.sigs.k8s.io/jobset-name": jobset,
              "jobset.sigs.k8s.io/job-index": str(index)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"automountServiceAccountToken": False, "nodeName": "no-kubelet",
                     "containers": [{"name": "node", "image": "busybox"}]}}


@pytest.fixture
def applied(kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
            tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    monkeypatch.setenv("KUBECONFIG", str(kube_cluster.kubeconfig_path))
    monkeypatch.setenv("FTSPEC_KUBE_CONTEXT", "admin")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FTSPEC_KUBE_RETRIES", "0")
    prepare_namespace(kube_cluster, kube_namespace)
    spec = spec_copy(tmp_path)
    ns = kube_namespace
    res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert res.code == 0, res.out + res.err
    # no controller-manager creates the namespace's default service account
    kube_cluster.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
                         {"apiVersion": "v1", "kind": "ServiceAccount",
                          "metadata": {"name": "default"}})
    for pod in (_pod(f"{NAME}-node-0-0", NAME, 0), _pod(f"{NAME}-node-1-0", NAME, 1),
                _pod("other-node-0-0", "other", 0)):
        kube_cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    return {"cluster": kube_cluster, "ns": ns, "spec": spec}


def test_logs_come_from_the_jobs_pods_and_a_selector_picks_one_rank(
        applied: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, spec = applied["ns"], applied["spec"]
    every = run_cli(capsys, "logs", spec, "-n", ns)
    # no kubelet: the first pod's log is refused (its node "no-kubelet" is not found; the
    # API server words it as a pod), and the error names the pod it asked for
    assert '"no-kubelet" not found' in every.err, every.err
    assert every.code == 1 and f"{ns}/{NAME}-node-0-0" in every.err, every.err
    rank1 = run_cli(capsys, "logs", spec, "-n", ns, "-l", "jobset.sigs.k8s.io/job-index=1")
    assert rank1.code == 1 and f"{ns}/{NAME}-node-1-0" in rank1.err, rank1.err
    assert "node-0-0" not in rank1.err and "other" not in rank1.err
    none = run_cli(capsys, "logs", spec, "-n", ns, "-l", "jobset.sigs.k8s.io/job-index=7")
    assert none.code == 1 and "has no pods yet" in none.err, none.err


def test_follow_polls_while_running_and_ends_with_the_job(
        applied: dict[str, Any], tmp_path: Path) -> None:
    cluster, ns, spec = applied["cluster"], applied["ns"], applied["spec"]
    cluster.patch_status(*TJ, NAME, {"jobsStatus": [
        {"name": "node", "active": 2, "ready": 2, "succeeded": 0, "failed": 0,
         "suspended": 0}]}, namespace=ns)
    env = {**os.environ, **cluster.env(), "FTSPEC_KUBE_CONTEXT": "admin", "NO_COLOR": "1"}
    proc = subprocess.Popen([FTSPEC, "logs", str(spec), "-n", ns, "--follow"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(5)  # two polls at least
        assert proc.poll() is None, proc.communicate()  # still following a running job
        cluster.patch_status(*TJ, NAME, {"conditions": [
            {"type": "Complete", "status": "True", "reason": "JobSetCompleted",
             "message": "jobset completed", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
            namespace=ns)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err
    assert "Traceback" not in err


def test_status_of_a_failed_trainjob_names_the_pod_that_ran_out_of_memory(
        applied: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    import json

    cluster, ns, spec = applied["cluster"], applied["ns"], applied["spec"]
    cluster.patch_status("v1", "Pod", f"{NAME}-node-1-0", {
        "phase": "Failed", "containerStatuses": [{
            "name": "node", "image": "busybox", "imageID": "", "ready": False,
            "restartCount": 0, "state": {"terminated": {
                "reason": "OOMKilled", "exitCode": 137, "startedAt": "2026-01-01T00:00:00Z",
                "finishedAt": "2026-01-01T00:01:00Z"}}}]}, namespace=ns)
    cluster.patch_status(*TJ, NAME, {"conditions": [
        {"type": "Failed", "status": "True", "reason": "JobSetFailed",
         "message": "jobset failed: job node-1 failed",
         "lastTransitionTime": "2026-01-01T00:01:00Z"}]}, namespace=ns)
    res = run_cli(capsys, "status", spec, "-n", ns, "--json")
    assert res.code == 0, res.err
    (got,) = json.loads(res.out)
    assert got["phase"] == "Failed"
    assert got["reason"] == {
        "validity": "invalid", "exit_code": 137,
        "out_of_memory": "cpu (OOMKilled: the container's memory limit)",
        "platform": f"jobset failed: job node-1 failed; pod {NAME}-node-1-0 container node: "
                    "OOMKilled (exit code 137)",
        "terminated": [{"pod": f"{NAME}-node-1-0", "container": "node",
                        "reason": "OOMKilled", "exit_code": 137}]}
    human = run_cli(capsys, "status", spec, "-n", ns)
    assert ("reason (invalid): out of memory: cpu (OOMKilled: the container's memory limit); "
            f"jobset failed: job node-1 failed; pod {NAME}-node-1-0 container node: OOMKilled "
            "(exit code 137)") in human.out, human.out


def test_list_shows_the_namespaces_ftspec_jobs(applied: dict[str, Any],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import json

    cluster, ns, spec = applied["cluster"], applied["ns"], applied["spec"]
    res = run_cli(capsys, "list", spec, "-n", ns, "--json")
    assert res.code == 0, res.err
    kube = [r for r in json.loads(res.out) if r["where"] == ns]
    spec_id = cluster.get_object(*TJ, NAME, namespace=ns)["metadata"]["labels"][
        "ftspec.dev/spec-id"]
    assert [(r["name"], r["target"], r["phase"], r["job"]) for r in kube] == [
        (spec_id, "kubeflow", "Pending", f"TrainJob/{NAME}")]
    assert kube[0]["age_s"] >= 0
    cluster.patch_status(*TJ, NAME, {"conditions": [
        {"type": "Complete", "status": "True", "reason": "JobSetCompleted",
         "message": "jobset completed", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        namespace=ns)
    done = run_cli(capsys, "list", "-n", ns, "--phase", "Succeeded")
    assert done.code == 0, done.err
    # the working folder's own local runs are listed too (CI's quickstart run, say)
    rows = [line.split() for line in done.out.splitlines()[1:]]
    assert [r[:4] for r in rows if r[2] == ns] == [[spec_id, "kubeflow", ns, "Succeeded"]], \
        done.out
    none = run_cli(capsys, "list", "-n", ns, "--phase", "Running", "--json")
    assert [r for r in json.loads(none.out) if r["where"] == ns] == []


def test_list_and_output_say_honestly_what_the_unreadable_pod_log_cannot_tell(
        applied: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """Step / loss come from the trainer pod's log; with no kubelet the API server refuses
    it, so the row shows "-" and says why, and `output` names each measured property it
    cannot give (validity still comes from the job's status)."""
    import json

    cluster, ns, spec = applied["cluster"], applied["ns"], applied["spec"]
    cluster.patch_status(*TJ, NAME, {"jobsStatus": [
        {"name": "node", "active": 2, "ready": 2, "succeeded": 0, "failed": 0,
         "suspended": 0}]}, namespace=ns)
    res = run_cli(capsys, "list", spec, "-n", ns, "--json")
    assert res.code == 0, res.err
    (row,) = [r for r in json.loads(res.out) if r["where"] == ns]
    assert row["phase"] == "Running" and row["step"] is None and row["loss"] is None
    assert row["total_steps"] is not None and row["total_steps"] > 0  # the applied record's
    assert row["progress_note"].startswith(
        f"no pod log could be read: pod {NAME}-node-0-0: "), row["progress_note"]
    assert '"no-kubelet" not found' in row["progress_note"], row["progress_note"]
    human = run_cli(capsys, "list", "-n", ns)
    (line,) = [ln.split() for ln in human.out.splitlines() if f" {ns} " in ln]
    assert line[3:6] == ["Running", f"-/{row['total_steps']}", "-"], human.out

    running = run_cli(capsys, "output", spec, "-n", ns, "--json")
    assert running.code == 0, running.err
    assert json.loads(running.out)["measured"] == {}  # not ended: nothing measured yet
    cluster.patch_status(*TJ, NAME, {"conditions": [
        {"type": "Complete", "status": "True", "reason": "JobSetCompleted",
         "message": "jobset completed", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        namespace=ns)
    done = run_cli(capsys, "output", spec, "-n", ns, "--json")
    assert done.code == 0, done.err
    measured = json.loads(done.out)["measured"]
    assert measured["validity"] == "ok"
    assert set(measured["unavailable"]) == {"train_runtime_s", "dataset_tokens",
                                            "dataset_tokens_per_second", "peak_memory"}
    assert all("no pod log could be read" in why for key, why in
               measured["unavailable"].items() if key != "dataset_tokens_per_second")
    text = run_cli(capsys, "output", spec, "-n", ns)
    assert "validity" in text.out and "train_runtime_s" in text.out
    assert "= unavailable: no pod log could be read" in text.out, text.out
