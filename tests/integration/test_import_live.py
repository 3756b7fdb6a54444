"""`ftspec import trainjob --live NS/NAME -o SPEC` against a real kube-apiserver with the real
Trainer CRDs: a TrainJob created by someone else (kubectl-style POST) is read, written as a
spec and adopted (metadata only, no replace); `ftspec plan` on that spec is then a no-op."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.kubecli import run_cli, use_cluster
from helpers.trainjobs import SDK_TRAINJOB

pytestmark = pytest.mark.kube

CORPUS = Path(__file__).parents[1] / "importers" / "corpus" / "trainjob"
TJ = ("trainer.kubeflow.org/v1alpha1", "TrainJob")


@pytest.fixture
def env(kube_cluster: Any, kube_namespace: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> dict[str, Any]:
    use_cluster(monkeypatch, kube_cluster)
    return {"cluster": kube_cluster, "ns": kube_namespace, "tmp": tmp_path}


def _trainjob(name: str, ns: str) -> dict[str, Any]:
    text = SDK_TRAINJOB if name == "sdk" else (CORPUS / name).read_text()
    docs = [d for d in yaml.safe_load_all(text) if d]
    obj: dict[str, Any] = copy.deepcopy(next(d for d in docs if d.get("kind") == "TrainJob"))
    obj["metadata"]["namespace"] = ns
    return obj


@pytest.mark.parametrize("name", ["runtime-patches.yaml", "kueue-integration.yaml", "sdk"])
def test_live_import_adopts_without_replace(env: dict[str, Any], name: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    cluster, ns = env["cluster"], env["ns"]
    obj = _trainjob(name, ns)
    created = cluster.create_object(obj, namespace=ns)
    uid = created["metadata"]["uid"]
    ref = f"{ns}/{obj['metadata']['name']}"
    spec = env["tmp"] / "adopted.yaml"
    res = run_cli(capsys, "import", "trainjob", "--live", ref, "-o", spec)
    assert res.code == 0, res.out + res.err
    assert f"adopted trainjob {ref}" in res.err
    text = spec.read_text()
    assert f"# from trainjob/{ns}/{obj['metadata']['name']}:" in text
    plan = run_cli(capsys, "plan", spec, "--detailed-exitcode")
    assert plan.code == 0, plan.out + plan.err
    assert "No changes." in plan.out
    live = cluster.get_object(*TJ, obj["metadata"]["name"], namespace=ns)
    assert live["metadata"]["uid"] == uid  # the same object: adopted, never replaced
    assert live["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ftspec"
    assert live["spec"]["trainer"] == created["spec"]["trainer"]


def test_live_import_refuses_what_it_cannot_adopt(env: dict[str, Any],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cluster, ns = env["cluster"], env["ns"]
    res = run_cli(capsys, "import", "trainjob", "--live", f"{ns}/absent", "-o",
                  env["tmp"] / "x.yaml")
    assert res.code == 1 and f"no TrainJob {ns}/absent" in res.err
    obj = _trainjob("hello-world.yaml", ns)
    cluster.create_object(obj, namespace=ns)
    spec = env["tmp"] / "hello.yaml"
    res = run_cli(capsys, "import", "trainjob", "--live", f"{ns}/hello-world", "-o", spec,
                  "--json")
    assert res.code == 0, res.err
    assert json.loads(res.out)["adopted"] is True
    # a changed spec now plans an update of ftspec's own object, with the reason (the
    # re-created TrainJob's runtime must exist: plan's preflight checks it)
    runtimes = cluster.request("GET", f"/apis/{TJ[0]}/clustertrainingruntimes")["items"]
    if "torch-distributed" not in {r["metadata"]["name"] for r in runtimes}:
        cluster.install_runtimes(("torch-distributed.yaml",))
    text = spec.read_text().replace("image: alpine:latest", "image: alpine:3.20")
    spec.write_text(text)
    plan = run_cli(capsys, "plan", spec, "--detailed-exitcode")
    assert plan.code == 2, plan.out + plan.err
    assert "spec.trainer.image" in plan.out


def test_lost_spec_is_recovered_from_the_object_ftspec_applied(
        env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from helpers.kubecli import prepare_namespace, spec_copy

    cluster, ns = env["cluster"], env["ns"]
    prepare_namespace(cluster, ns)
    original = spec_copy(env["tmp"])
    assert run_cli(capsys, "apply", original, "-n", ns, "--auto-approve").code == 0
    uid = cluster.get_object(*TJ, "llama32-1b-alpaca-lora", namespace=ns)["metadata"]["uid"]
    spec = env["tmp"] / "recovered.yaml"
    res = run_cli(capsys, "import", "trainjob", "--live", f"{ns}/llama32-1b-alpaca-lora",
                  "-o", spec)
    assert res.code == 0, res.out + res.err
    assert "overrides:" not in spec.read_text()  # every field read back into the spec
    plan = run_cli(capsys, "plan", spec, "--detailed-exitcode")
    assert plan.code == 0 and "No changes." in plan.out, plan.out + plan.err
    live = cluster.get_object(*TJ, "llama32-1b-alpaca-lora", namespace=ns)
    assert live["metadata"]["uid"] == uid


def test_v21_trainjob_is_adopted_on_a_v21_cluster(env: dict[str, Any],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cluster, ns = env["cluster"], env["ns"]
    obj = _trainjob("hello-world.yaml", ns)
    obj["spec"]["labels"] = {"team": "nlp"}
    obj["spec"]["podTemplateOverrides"] = [
        {"targetJobs": [{"name": "node"}], "spec": {"nodeSelector": {"pool": "train"}}}]
    cluster.reinstall_trainjob_crd("v2.1.0")
    try:
        cluster.create_object(obj, namespace=ns)
        spec = env["tmp"] / "v21.yaml"
        res = run_cli(capsys, "import", "trainjob", "--live", f"{ns}/hello-world", "-o", spec)
        assert res.code == 0, res.out + res.err
        assert "trainer_version: v2.1" in spec.read_text()
        plan = run_cli(capsys, "plan", spec, "--detailed-exitcode")
        assert plan.code == 0 and "No changes." in plan.out, plan.out + plan.err
    finally:
        cluster.reinstall_trainjob_crd(None)
