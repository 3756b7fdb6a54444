"""What the real controllers do with ftspec's objects: name limits, webhook denials, runtime patches,
replace races (issue 33's D1-D4), checked against the Trainer, JobSet and KubeRay themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import REPO, run_cli

from realcluster.prepare import applied_example, compiled, prepare_references

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(600)]

TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"
JOBSET = "/apis/jobset.x-k8s.io/v1alpha2"
EXAMPLE = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
EXAMPLE_NAME = "llama32-1b-alpaca-lora"


def renamed_example(tmp: Path, name: str) -> Path:
    text = EXAMPLE.read_text(encoding="utf-8").replace(f"name: {EXAMPLE_NAME}", f"name: {name}", 1)
    path = tmp / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def warning_events(cluster: Any, ns: str, name: str) -> list[dict[str, Any]]:
    path = f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3D{name},type%3DWarning"
    return list(cluster.request("GET", path)["items"])


def jobset_created(cluster: Any, ns: str, name: str) -> bool:
    return bool(cluster._exists(f"{JOBSET}/namespaces/{ns}/jobsets/{name}"))


def test_longest_runnable_trainjob_name_is_what_the_controllers_accept(
        real_env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """D1: the torchtune runtimes' longest runnable TrainJob name, found by the real JobSet webhook,
    is the limit ftspec enforces at validate: one character more is refused at metadata.name."""
    cluster, ns, tmp = real_env["cluster"], real_env["ns"], real_env["tmp"]
    objs = compiled(capsys, EXAMPLE, ns, "kubeflow")
    prepare_references(cluster, ns, objs)
    (trainjob,) = [o for o in objs if o["kind"] == "TrainJob"]

    def create_raw(name: str) -> None:  # ftspec's compiled object, bypassing ftspec's own checks
        body = {**trainjob, "metadata": {**trainjob["metadata"], "name": name, "namespace": ns}}
        cluster.request("POST", f"{TRAINER}/namespaces/{ns}/trainjobs", body)

    longest = "a" + "b" * 32  # 33 characters: <name>-dataset-initializer-0-0-<5> is 63
    too_long = longest + "c"
    create_raw(longest)
    create_raw(too_long)
    assert cluster.wait_for("the JobSet of the 33-character TrainJob", lambda: jobset_created(cluster, ns, longest))
    denial = cluster.wait_for("the Trainer's warning for the 34-character TrainJob",
                              lambda: warning_events(cluster, ns, too_long))
    assert not jobset_created(cluster, ns, too_long)
    assert any("63" in e.get("message", "") or "too long" in e.get("message", "").lower() for e in denial), denial
    ok = run_cli(capsys, "validate", renamed_example(tmp, longest))
    assert ok.code == 0, ok.out + ok.err
    refused = run_cli(capsys, "validate", renamed_example(tmp, too_long))
    assert refused.code == 1, refused.out + refused.err
    assert "metadata.name" in refused.out + refused.err
    assert "33" in refused.out + refused.err


def test_webhook_denial_is_the_servers_refusal_not_rbac(real_env: dict[str, Any],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """D2: the Trainer's webhook denies a TrainJob whose runtime does not exist with HTTP 403;
    the plan says the webhook refused it and never that RBAC forbids it, nor plans on silently."""
    cluster, ns, tmp = real_env["cluster"], real_env["ns"], real_env["tmp"]
    prepare_references(cluster, ns, compiled(capsys, EXAMPLE, ns, "kubeflow"))
    spec = tmp / "missing-runtime.yaml"
    spec.write_text(EXAMPLE.read_text(encoding="utf-8").replace(
        "name: torchtune-llama3.2-1b,", "name: torchtune-no-such-runtime,"), encoding="utf-8")
    plan = run_cli(capsys, "plan", spec, "-n", ns)
    text = plan.out + plan.err
    assert plan.code == 1, text
    assert "planned without server defaults" not in text
    assert "ask a cluster admin" not in text and "RBAC" not in text.replace("not RBAC", "")
    assert "torchtune-no-such-runtime" in text


def test_generated_runtime_plans_its_trainjob_after_the_runtime(real_env: dict[str, Any],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """D2: the first plan of a spec that generates its TrainingRuntime is not degraded; apply
    creates the runtime first and the TrainJob is admitted once the Trainer's cache has it."""
    cluster, ns, tmp = real_env["cluster"], real_env["ns"], real_env["tmp"]
    example = REPO / "examples" / "sfttrainer-fms-hf-tuning.yaml"
    spec = tmp / example.name
    spec.write_text(example.read_text(encoding="utf-8"), encoding="utf-8")
    prepare_references(cluster, ns, compiled(capsys, spec, ns, "kubeflow"))
    plan = run_cli(capsys, "plan", spec, "-n", ns)
    assert plan.code == 0, plan.out + plan.err
    assert "planned without server defaults" not in plan.out + plan.err
    applied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert applied.code == 0, applied.out + applied.err
    objs = compiled(capsys, spec, ns, "kubeflow")
    assert {o["kind"] for o in objs} == {"ConfigMap", "TrainingRuntime", "TrainJob"}
    (trainjob,) = [o for o in objs if o["kind"] == "TrainJob"]
    assert cluster.wait_for("the Trainer's JobSet of the TrainJob on its generated runtime",
                            lambda: jobset_created(cluster, ns, trainjob["metadata"]["name"]))
    again = run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode")
    assert again.code == 0, again.out + again.err


def test_runtime_patch_change_on_a_running_trainjob_is_a_replace(real_env: dict[str, Any],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """D3: the Trainer refuses any change to spec.runtimePatches of a TrainJob that is not
    suspended; a label change (it lives in the patch) plans a replace, and apply goes through."""
    cluster, ns = real_env["cluster"], real_env["ns"]
    spec, _ = applied_example(capsys, real_env, EXAMPLE, "kubeflow", plan_first=False)
    cluster.wait_for("the JobSet", lambda: jobset_created(cluster, ns, EXAMPLE_NAME))
    uid = cluster.request("GET", f"{TRAINER}/namespaces/{ns}/trainjobs/{EXAMPLE_NAME}")["metadata"]["uid"]
    plan = run_cli(capsys, "plan", spec, "-n", ns, "--set", "metadata.labels.team=vision")
    assert plan.code == 0, plan.out + plan.err
    assert "must be replaced" in plan.out, plan.out
    assert "runtimePatches" in plan.out
    applied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve", "--set", "metadata.labels.team=vision")
    assert applied.code == 0, applied.out + applied.err
    live = cluster.request("GET", f"{TRAINER}/namespaces/{ns}/trainjobs/{EXAMPLE_NAME}")
    assert live["metadata"]["uid"] != uid
    assert live["metadata"]["labels"]["team"] == "vision"


def test_replaced_trainjob_does_not_inherit_the_old_jobsets_result(real_env: dict[str, Any],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """D4: a replace waits until the old JobSet is gone: the Trainer looks a JobSet up by name
    and copies its Complete condition; a lingering one (held here by a finalizer, as another
    controller's would) must not make the new TrainJob 'succeed' without running."""
    import threading

    cluster, ns = real_env["cluster"], real_env["ns"]
    spec, _ = applied_example(capsys, real_env, EXAMPLE, "kubeflow", plan_first=False)
    row = run_cli(capsys, "status", spec, "-n", ns, "--watch", "--json")
    assert '"Succeeded"' in row.out, row.out
    jobset_path = f"{JOBSET}/namespaces/{ns}/jobsets/{EXAMPLE_NAME}"
    cluster.request("PATCH", jobset_path, {"metadata": {"finalizers": ["ftspec.test/hold"]}},
                    content_type="application/merge-patch+json")
    release = threading.Timer(8.0, lambda: cluster.request(
        "PATCH", jobset_path, {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json"))
    release.start()
    try:
        sets = ("--set", "resources.gpus_per_node=2")
        applied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve", *sets)
        assert applied.code == 0, applied.out + applied.err
    finally:
        release.join()
    new = cluster.request("GET", f"{TRAINER}/namespaces/{ns}/trainjobs/{EXAMPLE_NAME}")
    jobset = cluster.wait_for("the new JobSet", lambda: cluster._exists(jobset_path) and cluster.request("GET", jobset_path))
    assert jobset["metadata"]["ownerReferences"][0]["uid"] == new["metadata"]["uid"]
    assert jobset["spec"]["replicatedJobs"][-1]["template"]["spec"]["template"]["spec"]["containers"][0][
        "resources"]["limits"]["nvidia.com/gpu"] in (2, "2")


def test_runtime_changed_under_a_live_trainjob_is_said_in_the_plan(real_env: dict[str, Any],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Runtime drift: someone edits the ClusterTrainingRuntime a live TrainJob started from (a new
    trainer image); the Trainer does not re-render the running JobSet, so the plan says what a new
    run of the same spec would train with, while the TrainJob itself stays 'no changes'."""
    cluster, ns = real_env["cluster"], real_env["ns"]
    spec, _ = applied_example(capsys, real_env, EXAMPLE, "kubeflow", plan_first=False)
    cluster.wait_for("the JobSet", lambda: jobset_created(cluster, ns, EXAMPLE_NAME))
    quiet = run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode")
    assert quiet.code == 0 and "runtime drift" not in quiet.out + quiet.err, quiet.out + quiet.err
    path = f"{TRAINER}/clustertrainingruntimes/torchtune-llama3.2-1b"
    jobs = cluster.request("GET", path)["spec"]["template"]["spec"]["replicatedJobs"]
    index = next(i for i, j in enumerate(jobs) if j["name"] == "node")
    image = f"/spec/template/spec/replicatedJobs/{index}/template/spec/template/spec/containers/0/image"
    old = jobs[index]["template"]["spec"]["template"]["spec"]["containers"][0]["image"]
    cluster.request("PATCH", path, [{"op": "replace", "path": image, "value": "example.com/torchtune-trainer:next"}],
                    content_type="application/json-patch+json")
    try:
        drifted = run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode")
        text = drifted.out + drifted.err
        assert "runtime drift: ClusterTrainingRuntime torchtune-llama3.2-1b changed since TrainJob" in text, text
        assert f"node/node image: {old} -> example.com/torchtune-trainer:next" in text, text
    finally:
        cluster.request("PATCH", path, [{"op": "replace", "path": image, "value": old}],
                        content_type="application/json-patch+json")
