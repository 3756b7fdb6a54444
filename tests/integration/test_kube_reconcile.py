"""plan / apply / destroy / status on a real kube-apiserver (no mocks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.kubecli import reconcile_env, run_cli, spec_copy

pytestmark = pytest.mark.kube

TJ = ("trainer.kubeflow.org/v1alpha1", "TrainJob")


@pytest.fixture
def env(kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> dict[str, Any]:
    return reconcile_env(kube_cluster, kube_namespace, monkeypatch, tmp_path)


def _trainjobs(cluster: Any, ns: str) -> list[dict[str, Any]]:
    out = cluster.request("GET", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs")
    return list(out.get("items") or [])


def _plan_json(capsys: pytest.CaptureFixture[str], spec: Path, ns: str, *extra: str
               ) -> dict[str, Any]:
    res = run_cli(capsys, "plan", spec, "-n", ns, "--json", *extra)
    assert res.code == 0, res.err
    return json.loads(res.out)


def _actions(plan: dict[str, Any]) -> dict[str, str]:
    return {c["address"]: c["action"] for c in plan["changes"]}


def test_create_then_noop(env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, spec = env["ns"], env["spec"]
    first = run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode")
    assert first.code == 2, first.err
    assert "will be created" in first.out
    assert "Plan: 1 to add, 0 to change, 0 to destroy." in first.out
    applied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert applied.code == 0, applied.out + applied.err
    assert "Apply complete: 1 run started." in applied.out
    jobs = _trainjobs(env["cluster"], ns)
    assert [j["metadata"]["name"] for j in jobs] == ["llama32-1b-alpaca-lora"]
    managers = {m["manager"] for m in jobs[0]["metadata"]["managedFields"]}
    assert managers == {"ftspec"}
    second = run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode")
    assert second.code == 0, second.out + second.err
    assert "No changes." in second.out


def test_update_mutable_and_replace_immutable(env: dict[str, Any],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    ns, spec = env["ns"], env["spec"]
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    uid = _trainjobs(env["cluster"], ns)[0]["metadata"]["uid"]
    # mutable: suspend -> update in place (labels are copied into runtimePatches, which the
    # Trainer refuses to change on a running TrainJob: test_kube_controller_rules.py)
    plan = _plan_json(capsys, spec, ns, "--set", "deploy.kubeflow.suspend=true")
    (change,) = [c for c in plan["changes"] if c["action"] != "no-op"]
    assert change["action"] == "update"
    assert [(f["path"], f["after"]) for f in change["fields"]] == [("spec.suspend", True)]
    res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve",
                  "--set", "deploy.kubeflow.suspend=true")
    assert res.code == 0, res.err
    live = _trainjobs(env["cluster"], ns)[0]
    assert live["spec"]["suspend"] is True and live["metadata"]["uid"] == uid
    # immutable: GPUs per node live in spec.trainer -> replace, naming the field
    sets = ("--set", "deploy.kubeflow.suspend=true", "--set", "resources.gpus_per_node=2")
    text = run_cli(capsys, "plan", spec, "-n", ns, *sets)
    assert "must be replaced" in text.out
    assert "# forces replacement" in text.out
    assert "spec.trainer forces replacement" in text.out
    assert "GPUs 4 -> 2" in text.out
    assert "Plan: 1 to add, 0 to change, 1 to destroy." in text.out
    res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve", *sets)
    assert res.code == 0, res.err
    assert "deleted" in res.err
    (live,) = _trainjobs(env["cluster"], ns)
    assert live["metadata"]["uid"] != uid
    assert live["spec"]["trainer"]["numProcPerNode"] == 2
    assert run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode", *sets).code == 0


def _merge_patch(cluster: Any, ns: str, name: str, body: dict[str, Any], manager: str) -> None:
    path = (f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}"
            f"?fieldManager={manager}")
    cluster.request("PATCH", path, body, content_type="application/merge-patch+json")


NAME = "llama32-1b-alpaca-lora"


def test_drift_by_other_manager_and_conflict(env: dict[str, Any],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    ns, spec, cluster = env["ns"], env["spec"], env["cluster"]
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    _merge_patch(cluster, ns, NAME, {"spec": {"suspend": True}}, "kubectl-edit")
    plan = _plan_json(capsys, spec, ns)
    (change,) = plan["changes"]
    assert change["action"] == "update" and change["drift"] is True
    assert "kubectl-edit" in change["reason"]
    assert [(f["path"], f["before"], f["after"]) for f in change["fields"]] == [
        ("spec.suspend", True, False)]
    text = run_cli(capsys, "plan", spec, "-n", ns)
    assert "Objects have changed outside of ftspec" in text.out
    denied = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert denied.code == 1
    assert 'owned by field manager "kubectl-edit"' in denied.out
    assert "--force-conflicts" in denied.out
    assert _trainjobs(cluster, ns)[0]["spec"]["suspend"] is True
    forced = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve", "--force-conflicts")
    assert forced.code == 0, forced.out + forced.err
    assert _trainjobs(cluster, ns)[0]["spec"]["suspend"] is False
    assert run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode").code == 0


@pytest.fixture
def dry_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the objects the plan asked the server to dry-run."""
    from ftspec.reconciler.kubernetes.reads import Reader

    seen: list[str] = []
    real = Reader.dry_run

    def counted(self: Reader, obj: dict[str, Any]) -> dict[str, Any] | None:
        seen.append(obj["metadata"]["name"])
        return real(self, obj)

    monkeypatch.setattr(Reader, "dry_run", counted)
    return seen


def test_an_object_unchanged_since_applied_is_not_dry_run(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str], dry_runs: list[str]) -> None:
    """The server would answer with the live object: the plan knows it without asking.
    Whatever may differ is asked: a changed spec, or another manager's edit."""
    ns, spec, cluster = env["ns"], env["spec"], env["cluster"]
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    dry_runs.clear()
    assert run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode").code == 0
    assert dry_runs == []
    plan = _plan_json(capsys, spec, ns, "--set", "deploy.kubeflow.suspend=true")
    assert _actions(plan) == {f"kubeflow.TrainJob.{ns}/{NAME}": "update"}
    assert dry_runs == [NAME]
    _merge_patch(cluster, ns, NAME, {"metadata": {"labels": {"team": "nlp2"}}}, "someone")
    dry_runs.clear()
    (change,) = _plan_json(capsys, spec, ns)["changes"]
    assert change["action"] == "update" and change["drift"] is True
    assert dry_runs == [NAME]


def test_fields_set_under_ftspecs_name_are_still_found(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str], dry_runs: list[str]) -> None:
    """Someone applies ftspec's own object plus a label, as field manager ftspec: the digest
    and the manager match, yet a re-apply would remove the label. The plan asks the server
    and shows it."""
    ns, spec, cluster = env["ns"], env["spec"], env["cluster"]
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    live = _trainjobs(cluster, ns)[0]
    meta = live["metadata"]
    impostor = {"apiVersion": live["apiVersion"], "kind": live["kind"], "spec": live["spec"],
                "metadata": {"name": meta["name"], "namespace": ns,
                             "labels": {**meta["labels"], "extra": "1"},
                             "annotations": meta["annotations"]}}
    cluster.request("PATCH", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/"
                    f"{NAME}?fieldManager=ftspec", json.dumps(impostor).encode(),
                    content_type="application/apply-patch+yaml")
    dry_runs.clear()
    (change,) = _plan_json(capsys, spec, ns)["changes"]
    assert dry_runs == [NAME]
    assert change["action"] == "update"
    assert [(f["path"], f["before"], f["after"]) for f in change["fields"]] == [
        ("metadata.labels.extra", "1", None)]


def test_orphan_prune_after_rename_never_another_spec(env: dict[str, Any],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """metadata.id keeps the job's identity while its metadata.name (the TrainJob's name)
    changes: the object of the old name is deleted, another spec's never."""
    ns, cluster, tmp = env["ns"], env["cluster"], env["tmp"]
    spec = spec_copy(tmp, "job.yaml", {f"name: {NAME}": f"id: job\n  name: {NAME}"})
    other = spec_copy(tmp, "other.yaml", {f"name: {NAME}": "name: other-job"})
    assert run_cli(capsys, "apply", spec, other, "-n", ns, "--auto-approve").code == 0
    other_rv = next(j for j in _trainjobs(cluster, ns)
                if j["metadata"]["name"] == "other-job")["metadata"]["resourceVersion"]
    renamed = spec_copy(tmp, "job.yaml", {f"name: {NAME}": "id: job\n  name: llama-renamed"})
    plan = _plan_json(capsys, renamed, ns)
    plan2 = json.loads(run_cli(capsys, "plan", renamed, other, "-n", ns, "--json").out)
    for p in (plan, plan2):
        actions = _actions(p)
        assert actions[f"kubeflow.TrainJob.{ns}/llama-renamed"] == "create"
        assert actions[f"kubeflow.TrainJob.{ns}/{NAME}"] == "delete"
        assert actions.get(f"kubeflow.TrainJob.{ns}/other-job") in (None, "no-op")
    res = run_cli(capsys, "apply", renamed, other, "-n", ns, "--auto-approve")
    assert res.code == 0, res.out + res.err
    jobs = {j["metadata"]["name"]: j for j in _trainjobs(cluster, ns)}
    assert sorted(jobs) == ["llama-renamed", "other-job"]
    assert jobs["other-job"]["metadata"]["resourceVersion"] == other_rv


def test_saved_plan_applies_exactly_and_refuses_stale(env: dict[str, Any],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    ns, spec, cluster, tmp = env["ns"], env["spec"], env["cluster"], env["tmp"]
    saved = tmp / "plan.json"
    res = run_cli(capsys, "plan", spec, "-n", ns, "--out", saved)
    assert res.code == 0 and "ftspec apply" in res.out
    data = json.loads(saved.read_text())
    assert data["kind"] == "ftspec-plan" and data["format_version"] == 2
    assert data["read_digests"] == {f"kubeflow.TrainJob.{ns}/{NAME}": "absent"}
    assert run_cli(capsys, "apply", "--plan", saved).code == 0
    assert len(_trainjobs(cluster, ns)) == 1
    res = run_cli(capsys, "plan", spec, "-n", ns, "--out", saved, "--set",
                  "metadata.labels.team=x")
    assert res.code == 0
    _merge_patch(cluster, ns, NAME, {"metadata": {"labels": {"extra": "1"}}}, "someone")
    stale = run_cli(capsys, "apply", "--plan", saved)
    assert stale.code == 1
    assert "Saved plan is stale" in stale.err
    assert _trainjobs(cluster, ns)[0]["metadata"]["labels"]["team"] == "nlp"


def test_two_concurrent_applies_are_serialized_by_a_lease(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    import threading

    from ftspec.compiler.pipeline import SpecInput
    from ftspec.reconciler import engine
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.backends import BackendOptions
    from ftspec.reconciler.desired import load_desired, with_namespace
    from ftspec.reconciler.kubernetes.backend import KubernetesBackend

    ns, spec = env["ns"], env["spec"]
    _backend, desired = load_desired([SpecInput(spec, (), with_namespace((), ns))])
    holding, release = threading.Event(), threading.Event()

    class Blocking:
        def event(self, message: str, **data: Any) -> None:
            if data.get("lease"):
                holding.set()
                release.wait(60)

    first = KubernetesBackend(BackendOptions())
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(
        engine.apply(first, first.plan(desired), Blocking())))
    thread.start()
    assert holding.wait(60)
    second = KubernetesBackend(BackendOptions())
    with pytest.raises(BackendError, match="another `ftspec apply` of spec .* is in progress"):
        engine.apply(second, second.plan(desired), Blocking())
    release.set()
    thread.join(60)
    assert results and results[0].ok
    assert len(_trainjobs(env["cluster"], ns)) == 1


def test_limited_user_is_stopped_by_preflight_naming_the_verb(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, spec, cluster = env["ns"], env["spec"], env["cluster"]
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"
    cluster.request("POST", f"{rbac}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "ftspec-limited"},
        "rules": [{"apiGroups": ["trainer.kubeflow.org"],
                   "resources": ["trainjobs", "trainingruntimes"],
                   "verbs": ["get", "list", "patch"]},
                  {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]})
    cluster.request("POST", f"{rbac}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "ftspec-limited"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "ftspec-limited"},
        "subjects": [{"kind": "User", "name": "limited",
                      "apiGroup": "rbac.authorization.k8s.io"}]})
    res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve", "--context", "limited")
    assert res.code == 1
    assert "preflight failed, nothing was changed" in res.err
    assert f"you may not create trainjobs.trainer.kubeflow.org in namespace {ns}" in res.err
    assert "you may not create leases.coordination.k8s.io" in res.err
    assert _trainjobs(cluster, ns) == []


def test_apiserver_killed_mid_apply_then_next_apply_converges(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from ftspec.compiler.pipeline import SpecInput
    from ftspec.reconciler import engine
    from ftspec.reconciler.backends import BackendOptions
    from ftspec.reconciler.desired import load_desired, with_namespace
    from ftspec.reconciler.kubernetes.backend import KubernetesBackend

    ns, spec, cluster, tmp = env["ns"], env["spec"], env["cluster"], env["tmp"]
    other = spec_copy(tmp, "other.yaml", {f"name: {NAME}": "name: other-job"})
    assert run_cli(capsys, "apply", other, "-n", ns, "--auto-approve").code == 0
    cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "not-ftspec"},
        "data": {"k": "v"}})
    before = {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
              for o in _trainjobs(cluster, ns) + [
                  cluster.request("GET", f"/api/v1/namespaces/{ns}/configmaps/not-ftspec")]}

    class KillOnCreate:
        def event(self, message: str, **data: Any) -> None:
            if message.endswith("creating..."):
                cluster.kill_apiserver()

    backend = KubernetesBackend(BackendOptions())
    _backend, desired = load_desired([SpecInput(spec, (), with_namespace((), ns))])
    try:
        result = engine.apply(backend, backend.plan(desired), KillOnCreate())
        assert not result.ok
        assert "cannot reach the API server" in result.failed[0][1]
    finally:
        cluster.restart_apiserver()
    res = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve")
    assert res.code == 0, res.out + res.err
    assert run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode").code == 0
    names = sorted(j["metadata"]["name"] for j in _trainjobs(cluster, ns))
    assert names == ["llama32-1b-alpaca-lora", "other-job"]
    after = {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
             for o in _trainjobs(cluster, ns) + [
                 cluster.request("GET", f"/api/v1/namespaces/{ns}/configmaps/not-ftspec")]}
    for key, rv in before.items():
        assert after[key] == rv, key


@pytest.mark.parametrize("status,phase", [
    ({"jobsStatus": [{"name": "node", "active": 1, "ready": 1, "succeeded": 0, "failed": 0,
                      "suspended": 0}]}, "Running"),
    ({"conditions": [{"type": "Complete", "status": "True", "reason": "JobSetCompleted",
                      "message": "jobset completed", "lastTransitionTime":
                      "2026-01-01T00:00:00Z"}]}, "Succeeded"),
    ({"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                      "message": "deadline exceeded", "lastTransitionTime":
                      "2026-01-01T00:00:00Z"}]}, "Failed"),
])
def test_status_from_the_status_subresource(env: dict[str, Any],
                                            capsys: pytest.CaptureFixture[str],
                                            status: dict[str, Any], phase: str) -> None:
    ns, spec, cluster = env["ns"], env["spec"], env["cluster"]
    res = run_cli(capsys, "status", spec, "-n", ns, "--json")
    assert json.loads(res.out)[0]["phase"] == "Unknown"
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    assert json.loads(run_cli(capsys, "status", spec, "-n", ns, "--json").out)[0][
        "phase"] == "Pending"
    cluster.patch_status(*TJ, NAME, status, namespace=ns)
    (got,) = json.loads(run_cli(capsys, "status", spec, "-n", ns, "--json").out)
    assert got["phase"] == phase
    if "conditions" in status:
        assert got["platform"]["conditions"][0]["type"] == status["conditions"][0]["type"]
    waited = run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve", "--wait",
                     "--timeout", "3")
    assert waited.code == (0 if phase == "Succeeded" else 1)
    logs = run_cli(capsys, "logs", spec, "-n", ns)
    assert logs.code == 1 and "has no pods yet" in logs.err


def test_destroy(env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    ns, spec = env["ns"], env["spec"]
    assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
    refused = run_cli(capsys, "destroy", spec, "-n", ns)
    assert refused.code == 1 and "--auto-approve" in refused.err
    res = run_cli(capsys, "destroy", spec, "-n", ns, "--auto-approve")
    assert res.code == 0, res.err
    assert "Destroy complete! Resources: 1 destroyed." in res.out
    assert _trainjobs(env["cluster"], ns) == []


def test_v21_crd_is_detected_and_rendered(env: dict[str, Any],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ns, spec, cluster = env["ns"], env["spec"], env["cluster"]
    cluster.reinstall_trainjob_crd("v2.1.0")
    try:
        plan = _plan_json(capsys, spec, ns)
        after = plan["changes"][0]["after"]["spec"]
        assert "runtimePatches" not in after
        assert "podTemplateOverrides" in after
        assert run_cli(capsys, "apply", spec, "-n", ns, "--auto-approve").code == 0
        assert run_cli(capsys, "plan", spec, "-n", ns, "--detailed-exitcode").code == 0
    finally:
        cluster.reinstall_trainjob_crd(None)


def test_plan_and_apply_place_diagnostics_like_compile(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """The one compile path: a target check failed through --set is placed at the flag by
    compile, plan and apply alike (never ``<unknown>``)."""
    ns, spec = env["ns"], env["spec"]
    flag = ["--set", "model.dtype=fp16"]
    expected = "--set[0]:1:13: error: model.dtype: torchtune's recipes do not train in fp16"
    compiled = run_cli(capsys, "compile", spec, *flag)
    assert compiled.code == 1 and compiled.err.startswith(expected), compiled.err
    for command in (["plan"], ["apply", "--auto-approve"]):
        res = run_cli(capsys, *command, spec, "-n", ns, *flag)
        assert res.code == 1, res.out + res.err
        assert res.err.startswith(expected), res.err
        assert "<unknown>" not in res.err
    assert _trainjobs(env["cluster"], ns) == []


def test_server_error_is_located_in_the_overlay(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    """A 422 from the API server points at the overlay line that set the field (the loaded
    document's source map, not the base file read again). The server's own limit on the
    size of all annotations (256 KiB) is one ftspec does not check before sending."""
    ns, spec, tmp = env["ns"], env["spec"], env["tmp"]
    overlay = tmp / "big-annotations.yaml"
    overlay.write_text("metadata:\n  annotations:\n    notes: " + "x" * 270_000 + "\n",
                       encoding="utf-8")
    res = run_cli(capsys, "plan", spec, "-n", ns, "-f", overlay)
    assert res.code == 1, res.out
    assert "Error:" in res.err and "metadata.annotations" in res.err, res.err[:2000]
    assert f"at {overlay}:2:3 (metadata.annotations)" in res.err, res.err[:2000]
