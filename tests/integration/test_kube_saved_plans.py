"""Saved plans on a real kube-apiserver: a plan file cannot delete, create or address what
no spec produces (issue 34, item 1).

Each test is an attack from the issue, then the refusal, twice: through ``apply --plan``
(the plan's checksum recomputed, as anyone can), where the binding to the specs refuses
it (``reconciler.bound``), and straight into the backend's ``apply`` with a hand-made
plan, where the applier's own checks refuse it (kinds, ownership labels read from the live
object, names). On main before the fix, a plan deleted a Namespace ftspec does not own,
created a Secret in ``kube-system``, and a ConfigMap named ``victim?dryRun=All#`` deleted
the ConfigMap ``victim``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler import engine
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.backends import BackendOptions
from ftspec.reconciler.kubernetes.backend import KubernetesBackend
from ftspec.reconciler.model import Action, Change, Plan
from helpers.kubecli import reconcile_env, run_cli

pytestmark = pytest.mark.kube

OWNED = {"app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": "llama32-1b-alpaca-lora"}


class _Events:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def event(self, message: str, **data: Any) -> None:
        self.lines.append(message)


@pytest.fixture
def env(kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> dict[str, Any]:
    return reconcile_env(kube_cluster, kube_namespace, monkeypatch, tmp_path)


def _saved(capsys: pytest.CaptureFixture[str], env: dict[str, Any]) -> dict[str, Any]:
    res = run_cli(capsys, "plan", env["spec"], "-n", env["ns"], "--out", env["tmp"] / "p.json")
    assert res.code == 0, res.err
    return dict(json.loads((env["tmp"] / "p.json").read_text()))


def _forged(env: dict[str, Any], doc: dict[str, Any], *extra: dict[str, Any]) -> Path:
    """``doc`` with ``extra`` changes added, its checksum recomputed as anyone can."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    body["changes"] = [*body["changes"], *extra]
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    body["checksum"] = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    path = Path(env["tmp"]) / "forged.json"
    path.write_text(json.dumps(body))
    return path


def _change(address: str, action: str, obj: dict[str, Any]) -> dict[str, Any]:
    delete = action == "delete"
    return {"address": address, "action": action, "before": obj if delete else None,
            "after": None if delete else obj, "reason": None, "fields": [], "ml_changes": [],
            "drift": False, "spec_file": None, "upgrade": None, "moved_from": None,
            "moved": None}


def _apply_directly(*changes: Change) -> list[str]:
    """``changes`` straight into the Kubernetes backend's apply (no binding): the errors,
    the whole plan's refusal or each change's."""
    try:
        result = engine.apply(KubernetesBackend(BackendOptions()),
                              Plan("kubernetes", tuple(changes), {}, {}), _Events())
    except BackendError as exc:
        return [str(exc)]
    return [message for _, message in result.failed]


def _exists(cluster: Any, path: str) -> bool:
    return bool(cluster.api().exists(path))


def test_a_namespace_ftspec_does_not_own_is_not_deleted(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    cluster = env["cluster"]
    victim = cluster.create_namespace(f"victim-{secrets.token_hex(3)}")
    try:
        obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": victim}}
        address = f"kubeflow.Namespace._/{victim}"
        forged = _forged(env, _saved(capsys, env), _change(address, "delete", obj))
        res = run_cli(capsys, "apply", "--plan", forged)
        assert res.code == 1
        assert (f"changes[1] {address} (delete): its specs plan no change of {address}"
                in res.err), res.err
        assert _exists(cluster, f"/api/v1/namespaces/{victim}")
        assert _apply_directly(Change(address, Action.DELETE, obj, None)) == [
            (f"{address}: ftspec does not manage 'Namespace' objects for deploy.target "
            "'kubeflow'; nothing was changed")]
        assert _exists(cluster, f"/api/v1/namespaces/{victim}")
    finally:
        cluster.delete_namespace(victim)


def test_a_configmap_without_ownership_labels_is_not_deleted(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, ns = env["cluster"], env["ns"]
    cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim"},
        "data": {"keep": "me"}})
    path = f"/api/v1/namespaces/{ns}/configmaps/victim"
    claimed = {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "victim", "namespace": ns, "labels": OWNED}}
    address = f"kubeflow.ConfigMap.{ns}/victim"
    forged = _forged(env, _saved(capsys, env), _change(address, "delete", claimed))
    res = run_cli(capsys, "apply", "--plan", forged)
    assert res.code == 1 and "its specs plan no change of" in res.err, res.err
    assert _exists(cluster, path)
    # the plan claims the object is ftspec's; the live object's labels say otherwise
    (message,) = _apply_directly(Change(address, Action.DELETE, claimed, None))
    assert message.startswith(f"refusing to delete ConfigMap {ns}/victim: it does not carry "
                              "ftspec's ownership labels for spec 'llama32-1b-alpaca-lora'")
    assert _exists(cluster, path)


def test_a_secret_in_kube_system_is_not_created(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    cluster = env["cluster"]
    name = f"pwn-{secrets.token_hex(3)}"
    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": name, "namespace": "kube-system", "labels": OWNED},
              "stringData": {"token": "x"}}
    address = f"kubeflow.Secret.kube-system/{name}"
    forged = _forged(env, _saved(capsys, env), _change(address, "create", secret))
    res = run_cli(capsys, "apply", "--plan", forged)
    assert res.code == 1 and "its specs plan no change of" in res.err, res.err
    path = f"/api/v1/namespaces/kube-system/secrets/{name}"
    assert not _exists(cluster, path)
    assert _apply_directly(Change(address, Action.CREATE, None, secret)) == [
        (f"{address}: ftspec does not manage 'Secret' objects for deploy.target 'kubeflow'; "
        "nothing was changed")]
    assert not _exists(cluster, path)


def test_a_name_that_carries_a_query_addresses_nothing(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    cluster, ns = env["cluster"], env["ns"]
    cluster.request("POST", f"/api/v1/namespaces/{ns}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "victim", "labels": OWNED}, "data": {"keep": "me"}})
    path = f"/api/v1/namespaces/{ns}/configmaps/victim"
    bad = "victim?dryRun=All#"
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": bad, "namespace": ns, "labels": OWNED}}
    address = f"kubeflow.ConfigMap.{ns}/{bad}"
    forged = _forged(env, _saved(capsys, env), _change(address, "delete", obj))
    res = run_cli(capsys, "apply", "--plan", forged)
    assert res.code == 1 and "its specs plan no change of" in res.err, res.err
    assert _exists(cluster, path)
    (message,) = _apply_directly(Change(address, Action.DELETE, obj, None))
    assert f"configmaps name {bad!r} is not a valid Kubernetes name" in message, message
    assert "no request was made" in message
    assert _exists(cluster, path)


def test_a_bound_saved_plan_applies_and_only_once(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    doc = _saved(capsys, env)
    assert [c["action"] for c in doc["changes"]] == ["create"]
    res = run_cli(capsys, "apply", "--plan", env["tmp"] / "p.json")
    assert res.code == 0, res.out + res.err
    tj = (f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{env['ns']}/trainjobs/"
          "llama32-1b-alpaca-lora")
    assert _exists(env["cluster"], tj)
    again = run_cli(capsys, "apply", "--plan", env["tmp"] / "p.json")
    assert again.code == 1
    assert "Saved plan is stale: kubeflow.TrainJob." in again.err
    assert "was created since the plan was made" in again.err
