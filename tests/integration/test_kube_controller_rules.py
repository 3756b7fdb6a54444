"""What the real controllers do with ftspec's objects (issue 33), on a real kube-apiserver.

No controller runs in this server: the Trainer's admission rules are played by
``helpers.trainer_webhook`` (its v2.3.0 rules, denied as controller-runtime denies), and what
a controller writes (a JobSet named like the TrainJob, Warning Events) is written here as it
would. ``tests/realcluster`` repeats these against the real controllers.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import reconcile_env, run_cli, spec_copy
from helpers.trainer_webhook import NAME as WEBHOOK
from helpers.trainer_webhook import TrainerRules

pytestmark = pytest.mark.kube

NAME = "llama32-1b-alpaca-lora"
TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
RUNTIME_LINE = "    runtime: {name: torchtune-llama3.2-1b, kind: ClusterTrainingRuntime}"


@pytest.fixture
def env(kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> dict[str, Any]:
    return reconcile_env(kube_cluster, kube_namespace, monkeypatch, tmp_path)


def _generated_runtime_spec(tmp: Path) -> Path:
    """The example on the accelerate launcher with ftspec's generated TrainingRuntime."""
    return spec_copy(tmp, "gen.yaml", {
        "launcher: torchtune": "launcher: accelerate",
        RUNTIME_LINE: "    generate_runtime: true\n  scheduling: {image: ghcr.io/example/ft:1}"})


def _trainjob(cluster: Any, ns: str, name: str = NAME) -> dict[str, Any]:
    return cluster.request("GET", f"{TRAINER}/namespaces/{ns}/trainjobs/{name}")


# ---------------------------------------------------------------- D1: name limits at plan

def test_plan_checks_the_name_against_a_runtime_only_the_cluster_knows(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, cluster, tmp = env["ns"], env["cluster"], env["tmp"]
    runtime = json.loads(json.dumps(cluster.get_object(
        "trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", "torchtune-llama3.2-1b")))
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    jobs[0]["name"] = "prepare-the-dataset"  # 19 characters: names up to 33 (63 - 30)
    cluster.request("POST", f"{TRAINER}/namespaces/{ns}/trainingruntimes", {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
        "metadata": {"name": "team-runtime"}, "spec": runtime["spec"]})
    long_name = "llama32-1b-alpaca-lora-experiment-1"  # 35 characters
    spec = spec_copy(tmp, "job.yaml", {
        RUNTIME_LINE: "    runtime: {name: team-runtime, kind: TrainingRuntime}",
        f"name: {NAME} ": f"name: {long_name} "})
    assert run_cli(capsys, "validate", spec).code == 0  # validate cannot know this runtime
    res = run_cli(capsys, "plan", spec, "-n", ns)
    assert res.code == 1, res.out
    assert (f"job.yaml:12:9: error: metadata.name: a TrainJob name may have at most 33 "
            f"characters here (this one, '{long_name}', has 35): on runtime TrainingRuntime "
            "team-runtime, JobSet names the pods of replicated job prepare-the-dataset "
            "<name>-prepare-the-dataset-0-0-##### (##### random) and refuses pod names over "
            "63 characters") in res.err
    assert "preflight failed: 1 problem(s) that the cluster's objects show (above)" in res.err
    assert "do not exist" not in res.err
    short = spec_copy(tmp, "job.yaml", {
        RUNTIME_LINE: "    runtime: {name: team-runtime, kind: TrainingRuntime}"})
    assert run_cli(capsys, "plan", short, "-n", ns).code == 0


# ------------------------------------------- D2: admission refusals, runtime created first

def test_trainjob_on_its_new_runtime_is_marked_then_applied_after_it(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """The Trainer refuses a TrainJob whose runtime does not exist (403 from its webhook):
    the first plan of a spec that generates its runtime says the TrainJob is checked once
    the runtime exists, apply creates the runtime first and retries the TrainJob while the
    webhook's cache has not seen the runtime yet."""
    ns, cluster, tmp = env["ns"], env["cluster"], env["tmp"]
    spec = _generated_runtime_spec(tmp)
    with TrainerRules(cluster, ns, cache_lag_s=1.5) as rules:
        plan = json.loads(run_cli(capsys, "plan", spec, "-n", ns, "--json").out)
        assert not [w for w in plan["warnings"] if "without server defaults" in w]
        job = next(c for c in plan["changes"] if c["address"].endswith(f"TrainJob.{ns}/{NAME}"))
        assert job["action"] == "create"
        assert job["reason"] == (
            f"checked after its TrainingRuntime {NAME}-runtime exists: this plan creates it, "
            f"and the admission webhook {WEBHOOK} refuses the object until then")
        text = run_cli(capsys, "plan", spec, "-n", ns)
        assert (f"kubeflow.TrainJob.{ns}/{NAME}: checked after its TrainingRuntime "
                f"{NAME}-runtime exists") in text.out + text.err
        assert rules.denials  # the server really refused the dry run
        res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
        assert res.code == 0, res.out + res.err
        assert "waiting for the controller to see TrainingRuntime" in res.err
        assert _trainjob(cluster, ns)["metadata"]["name"] == NAME


def test_a_webhook_refusal_is_reported_at_the_field_not_as_rbac(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, cluster, tmp = env["ns"], env["cluster"], env["tmp"]
    spec = spec_copy(tmp, "job.yaml", {
        RUNTIME_LINE: "    runtime: {name: not-installed, kind: TrainingRuntime}"})
    with TrainerRules(cluster, ns):
        res = run_cli(capsys, "plan", spec, "-n", ns)
    assert res.code == 1
    assert "server-side dry-run not allowed" not in res.out + res.err
    assert "forbidden: you may not" not in res.err
    assert (f"the server refused to apply (dry-run) TrainJob {ns}/{NAME}: admission webhook "
            f'"{WEBHOOK}" denied the request: spec.runtimeRef: Invalid value:') in res.err
    assert "specified trainingRuntime must be created before the TrainJob is created" \
        in res.err
    assert "job.yaml:65:" in res.err  # deploy.kubeflow.runtime


# ------------------------------------------ D3: runtimePatches of a running TrainJob

def test_runtime_patches_change_on_a_running_trainjob_plans_a_replace(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, cluster, spec = env["ns"], env["cluster"], env["spec"]
    with TrainerRules(cluster, ns) as rules:
        assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
        uid = _trainjob(cluster, ns)["metadata"]["uid"]
        gate = ("the Trainer refuses any change to spec.runtimePatches while the TrainJob "
                "is not suspended (deploy.kubeflow.suspend)")
        # a label: copied into the patch's pod template, mutable on the TrainJob itself
        label = ("--set", "metadata.labels.team=vision")
        planned = run_cli(capsys, "plan", spec, "-n", ns, "--json", *label)
        assert planned.code == 0, planned.err
        (change,) = json.loads(planned.out)["changes"]
        assert change["action"] == "replace"
        assert change["reason"] == f"spec.runtimePatches forces replacement; {gate}"
        zone = ("--set", "deploy.scheduling.node_selector.zone=b")
        planned = run_cli(capsys, "plan", spec, "-n", ns, "--json", *zone)
        (change,) = json.loads(planned.out)["changes"]
        assert change["action"] == "replace" and change["reason"].endswith(gate)
        assert rules.denials  # the server refused the update dry runs: the plan replaces
        res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve", *zone)
        assert res.code == 0, res.out + res.err  # the Trainer never saw an in-place update
        live = _trainjob(cluster, ns)
        assert live["metadata"]["uid"] != uid
        # suspended, the Trainer lets the patch change in place
        suspended = ("--set", "deploy.kubeflow.suspend=true")
        assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve", *zone,
                       *suspended).code == 0
        uid = _trainjob(cluster, ns)["metadata"]["uid"]
        (change,) = json.loads(run_cli(capsys, "plan", spec, "-n", ns, "--json", *suspended,
                                       "--set", "deploy.scheduling.node_selector.zone=c"
                                       ).out)["changes"]
        assert change["action"] == "update"
        assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve", *suspended,
                       "--set", "deploy.scheduling.node_selector.zone=c").code == 0
        assert _trainjob(cluster, ns)["metadata"]["uid"] == uid


# ------------------------------------------------ D4: a replace that cannot inherit

JOBSET_CRD = "jobsets.jobset.x-k8s.io"


def _jobset_crd(cluster: Any) -> None:
    """A JobSet resource to put the Trainer's JobSet in (the real CRD where a test installed
    it; else a stand-in of the same group, version and names: only existence by name
    matters here)."""
    from harness.kubeapi import KubeApiError

    try:
        cluster.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                        f"{JOBSET_CRD}")
        return
    except KubeApiError as err:
        if err.status != 404:
            raise
    cluster.install_crd({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": JOBSET_CRD},
        "spec": {"group": "jobset.x-k8s.io", "scope": "Namespaced",
                 "names": {"plural": "jobsets", "singular": "jobset", "kind": "JobSet",
                           "listKind": "JobSetList"},
                 "versions": [{"name": "v1alpha2", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]}})


def _jobset_of(cluster: Any, ns: str, owner: dict[str, Any]) -> str:
    """A JobSet named like the TrainJob and owned by it, as the Trainer makes it."""
    path = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"
    meta = owner["metadata"]
    cluster.request("POST", path, {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": meta["name"], "ownerReferences": [{
            "apiVersion": owner["apiVersion"], "kind": "TrainJob", "name": meta["name"],
            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"replicatedJobs": []}})
    return f"{path}/{meta['name']}"


def test_replace_waits_until_the_old_jobset_is_gone(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, cluster, spec = env["ns"], env["cluster"], env["spec"]
    _jobset_crd(cluster)
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    jobset = _jobset_of(cluster, ns, _trainjob(cluster, ns))
    deleted_at: list[float] = []

    def collect() -> None:  # the garbage collector, a little later
        time.sleep(3)
        deleted_at.append(time.time())
        cluster.request("DELETE", jobset)

    collector = threading.Thread(target=collect)
    collector.start()
    res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve",
                  "--set", "resources.gpus_per_node=2")
    collector.join()
    assert res.code == 0, res.out + res.err
    assert f"waiting until JobSet {ns}/{NAME} is gone" in res.err
    created = _trainjob(cluster, ns)["metadata"]["creationTimestamp"]
    from datetime import datetime

    when = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    assert when >= int(deleted_at[0])  # created only after the old JobSet was gone


def test_replace_stops_when_the_old_jobset_stays(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ftspec.reconciler.kubernetes import children

    monkeypatch.setattr(children, "CHILDREN_TIMEOUT_S", 2.0)
    ns, cluster, spec = env["ns"], env["cluster"], env["spec"]
    _jobset_crd(cluster)
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    old = _trainjob(cluster, ns)
    _jobset_of(cluster, ns, old)
    res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve",
                  "--set", "resources.gpus_per_node=2")
    assert res.code == 1
    assert (f"JobSet {ns}/{NAME} (owned by TrainJob {NAME} (uid {old['metadata']['uid']})) "
            "is still there after") in res.out
    assert ("the new TrainJob was not created, because its controller would find that one "
            "by name and take its result") in res.out
    trainjobs = cluster.request("GET", f"{TRAINER}/namespaces/{ns}/trainjobs")["items"]
    assert trainjobs == []


# ------------------------------------------------------------- events: why it waits

def _event(cluster: Any, ns: str, kind: str, name: str, reason: str, message: str,
           api_version: str = "trainer.kubeflow.org/v1alpha1") -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cluster.request("POST", f"/api/v1/namespaces/{ns}/events", {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{name}."},
        "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name,
                           "namespace": ns},
        "type": "Warning", "reason": reason, "message": message,
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        "source": {"component": "trainer-controller-manager"}})


DENIED = ('TrainJob resources reconciliation failed: admission webhook "vjobset.kb.io" denied '
          'the request: spec.replicatedJobs[0].name: Invalid value: "x": JobSet name is too '
          "long, pod names generated for this JobSet will exceed 63 characters")


def test_status_and_list_say_why_a_pending_trainjob_does_not_start(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, cluster, spec = env["ns"], env["cluster"], env["spec"]
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    _event(cluster, ns, "TrainJob", NAME, "TrainJobResourcesCreationFailed", DENIED)
    _event(cluster, ns, "TrainJob", "another-job", "Other", "not this job's")
    res = run_cli(capsys, "status", spec, "-n", ns)
    assert res.code == 0, res.err
    line = f"Warning TrainJobResourcesCreationFailed on TrainJob {NAME}: {DENIED}"
    assert f"state: created; no trainer pods active yet; {line}" in res.out
    assert "not this job's" not in res.out
    (one,) = json.loads(run_cli(capsys, "status", spec, "-n", ns, "--json").out)
    assert [w["reason"] for w in one["platform"]["warnings"]] \
        == ["TrainJobResourcesCreationFailed"]
    listed = run_cli(capsys, "list", "-n", ns)
    assert f"{NAME}: {line}" in listed.out
    rows = json.loads(run_cli(capsys, "list", "-n", ns, "--json").out)
    assert [r["warning"] for r in rows if r["where"] == ns] == [line]


def test_failure_reason_and_wait_read_the_childrens_events(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, cluster, spec = env["ns"], env["cluster"], env["spec"]
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    _event(cluster, ns, "JobSet", NAME, "FailedCreate", "quota exceeded for pods",
           "jobset.x-k8s.io/v1alpha2")

    def fail() -> None:
        time.sleep(2)
        cluster.patch_status("trainer.kubeflow.org/v1alpha1", "TrainJob", NAME, {
            "conditions": [{"type": "Failed", "status": "True", "reason": "JobSetFailed",
                            "message": "jobset failed", "lastTransitionTime":
                            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]},
            namespace=ns)

    failer = threading.Thread(target=fail)
    failer.start()
    res = run_cli(capsys, "status", spec, "-n", ns, "--watch")
    failer.join()
    line = f"Warning FailedCreate on JobSet {NAME}: quota exceeded for pods"
    assert line in res.out + res.err
    (one,) = json.loads(run_cli(capsys, "status", spec, "-n", ns, "--json").out)
    assert one["phase"] == "Failed"
    assert line in json.dumps(one["reason"])


def test_rayjob_replace_waits_until_its_submitter_job_is_gone(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """KubeRay finds a RayJob's submitter Job by the RayJob's name: a replaced RayJob is
    created only once the old one's Job is gone."""
    ns, cluster, tmp = env["ns"], env["cluster"], env["tmp"]
    spec = spec_copy(tmp, "ray.yaml", {
        "  target: kubeflow\n  kubeflow:\n" + RUNTIME_LINE:
        "  target: kuberay\n  kuberay: {image: acme/ft:1}"})
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    rayjob = cluster.request("GET", f"/apis/ray.io/v1/namespaces/{ns}/rayjobs/{NAME}")
    jobs = f"/apis/batch/v1/namespaces/{ns}/jobs"
    cluster.request("POST", jobs, {  # the submitter Job, as KubeRay makes it
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": NAME, "ownerReferences": [{
            "apiVersion": "ray.io/v1", "kind": "RayJob", "name": NAME,
            "uid": rayjob["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "ray-job-submitter", "image": "acme/ft:1"}]}}}})

    def collect() -> None:  # the garbage collector, a little later
        time.sleep(3)  # (batch/v1 defaults to orphaning pods: a finalizer only GC removes)
        cluster.request("DELETE", f"{jobs}/{NAME}", {"apiVersion": "v1", "kind": "DeleteOptions",
                                                     "propagationPolicy": "Background"})

    collector = threading.Thread(target=collect)
    collector.start()
    res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve",
                  "--set", "training.learning_rate=1.0e-4")
    collector.join()
    assert res.code == 0, res.out + res.err
    assert f"waiting until submitter Job {ns}/{NAME} is gone" in res.err
    new = cluster.request("GET", f"/apis/ray.io/v1/namespaces/{ns}/rayjobs/{NAME}")
    assert new["metadata"]["uid"] != rayjob["metadata"]["uid"]
