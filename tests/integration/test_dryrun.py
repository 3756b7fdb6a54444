"""Server-side dry-run of every object the Kubernetes targets emit, on a real kube-apiserver.

For each example x applicable Kubernetes target, every compiled object is POSTed with
``?dryRun=All`` into a fresh namespace. The server runs its whole admission chain (schema
validation, structural pruning, defaulting) without persisting anything. The test asserts
HTTP 201, that the schema defaults for the fields ftspec left out were applied, and that
every field ftspec set comes back unchanged: a structural CRD schema silently *prunes*
unknown fields (the dry run asks for no strict field validation), so a dropped field is the bug to catch.
"""

from __future__ import annotations

import copy
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from ftspec.targets import get_target
from helpers.examples import EXAMPLES, applicable, example_job

pytestmark = pytest.mark.kube

KUBE_TARGETS = ("kubeflow", "kuberay")
METADATA_KEYS = ("name", "namespace", "labels", "annotations")
CRD_NAMES = {
    ("trainer.kubeflow.org", "TrainJob"): "trainjobs.trainer.kubeflow.org",
    ("trainer.kubeflow.org", "TrainingRuntime"): "trainingruntimes.trainer.kubeflow.org",
    ("ray.io", "RayJob"): "rayjobs.ray.io",
}


def _cases() -> list[Any]:
    cases = []
    for path in EXAMPLES:
        job = example_job(path)
        for target in applicable(job):
            if target in KUBE_TARGETS:
                cases.append(pytest.param(path, target, id=f"{path.stem}-{target}"))
    return cases


CASES = _cases()


# --------------------------------------------------------------------------- helpers


def dry_run_create(cluster: Any, obj: dict[str, Any], namespace: str) -> tuple[int, dict[str, Any]]:
    """POST ``obj`` into ``namespace`` with ``dryRun=All``; (HTTP status, decoded body)."""
    body = copy.deepcopy(obj)
    body.setdefault("metadata", {})["namespace"] = namespace
    path = cluster.resource_path(body["apiVersion"], body["kind"], namespace=namespace)
    req = urllib.request.Request(cluster.server + path + "?dryRun=All",
                                 data=json.dumps(body).encode(), method="POST")
    req.add_header("Authorization", f"Bearer {cluster.token('admin')}")
    req.add_header("Accept", "application/json")
    req.add_header("Content-Type", "application/json")
    context = ssl.create_default_context(cafile=str(cluster.ca_path))
    try:
        with urllib.request.urlopen(req, context=context, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def lost_fields(sent: Any, got: Any, path: str = "") -> list[str]:
    """Paths where a value in ``sent`` is missing from or different in ``got`` (``got`` may
    carry more: server defaults). Lists must keep their length and order."""
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            return [f"{path or '.'}: sent a mapping, got {got!r}"]
        out: list[str] = []
        for key, value in sent.items():
            sub = f"{path}.{key}" if path else key
            if key not in got:
                out.append(f"{sub}: pruned")
            else:
                out += lost_fields(value, got[key], sub)
        return out
    if isinstance(sent, list):
        if not isinstance(got, list) or len(got) != len(sent):
            return [f"{path}: sent {len(sent)} items, got {got!r}"]
        return [p for i, (s, g) in enumerate(zip(sent, got)) for p in lost_fields(s, g, f"{path}[{i}]")]
    if sent != got:
        return [f"{path}: sent {sent!r}, got {got!r}"]
    return []


def check_kept(sent: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """What the server dropped or changed among the fields ftspec set."""
    meta = {k: v for k, v in sent["metadata"].items() if k in METADATA_KEYS}
    payload = {k: v for k, v in sent.items() if k not in ("metadata", "apiVersion", "kind")}
    return lost_fields(meta, got.get("metadata", {}), "metadata") + lost_fields(payload, got)


def expected_defaults(schema: dict[str, Any], sent: Any, path: str = "") -> dict[str, Any]:
    """{path: default} for every schema default the server must apply to ``sent``: a property
    with a ``default`` that ``sent`` leaves out, inside an object that ``sent`` has."""
    out: dict[str, Any] = {}
    if isinstance(sent, dict):
        for key, prop in (schema.get("properties") or {}).items():
            sub = f"{path}.{key}" if path else key
            if key in sent:
                out.update(expected_defaults(prop, sent[key], sub))
            elif "default" in prop:
                out[sub] = prop["default"]
    elif isinstance(sent, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(sent):
            out.update(expected_defaults(schema["items"], item, f"{path}[{i}]"))
    return out


def value_at(obj: Any, path: str) -> Any:
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            obj = obj[int(part[1:-1])]
        else:
            obj = obj[part]
    return obj


def crd_schema(cluster: Any, obj: dict[str, Any]) -> dict[str, Any] | None:
    group, _, version = obj["apiVersion"].rpartition("/")
    name = CRD_NAMES.get((group, obj["kind"]))
    if name is None:
        return None
    crd = cluster.crd(name)
    (entry,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
    return schema


def dry_run_all(cluster: Any, objects: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """Dry-run every object; assert 201, defaults applied, nothing pruned. Returns the answers."""
    answers = []
    for obj in objects:
        where = f"{obj['kind']}/{obj['metadata']['name']}"
        status, got = dry_run_create(cluster, obj, namespace)
        assert status == 201, f"{where}: HTTP {status}: {got.get('message', got)}"
        assert got["metadata"]["namespace"] == namespace
        assert got["metadata"].get("uid"), f"{where}: the server did not admit the object"
        sent = {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}
        lost = check_kept(sent, got)
        assert not lost, f"{where}: the server dropped or changed fields ftspec set:\n" + "\n".join(lost)
        schema = crd_schema(cluster, obj)
        if schema is not None:
            defaults = expected_defaults(schema, sent)
            wrong = {p: (d, _safe_value(got, p)) for p, d in defaults.items()
                     if _safe_value(got, p) != d}
            assert not wrong, f"{where}: schema defaults not applied (expected, got): {wrong}"
        answers.append(got)
    return answers


def _safe_value(obj: Any, path: str) -> Any:
    try:
        return value_at(obj, path)
    except (KeyError, IndexError, TypeError):
        return "<missing>"


def _objects(artifacts: list[Any]) -> list[dict[str, Any]]:
    return [copy.deepcopy(dict(a.obj)) for a in artifacts if a.obj is not None]


def _assert_server_defaults(objects: list[dict[str, Any]], answers: list[dict[str, Any]]) -> None:
    """The defaults that the running operators rely on, named explicitly."""
    for sent, got in zip(objects, answers):
        if sent["kind"] == "TrainJob":
            assert "managedBy" not in sent["spec"]
            assert got["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
            assert got["spec"]["runtimeRef"]["apiGroup"] == "trainer.kubeflow.org"
            assert got["spec"]["runtimeRef"]["kind"] in ("TrainingRuntime", "ClusterTrainingRuntime")
        if sent["kind"] == "RayJob":
            if "submissionMode" not in sent["spec"]:
                assert got["spec"]["submissionMode"] == "K8sJobMode"
            for i, group in enumerate(sent["spec"]["rayClusterSpec"].get("workerGroupSpecs", [])):
                if "numOfHosts" not in group:
                    assert got["spec"]["rayClusterSpec"]["workerGroupSpecs"][i]["numOfHosts"] == 1


# --------------------------------------------------------------------------- tests


def test_cases_cover_both_targets() -> None:
    targets = {p.values[1] for p in CASES}
    assert targets == set(KUBE_TARGETS), CASES


@pytest.mark.parametrize(("example", "target"), CASES)
def test_dry_run_create(kube_cluster: Any, kube_namespace: str, example: Path, target: str) -> None:
    job = example_job(example)
    objects = _objects(get_target(target).compile(job))
    assert objects, f"{target} emitted no objects for {example.name}"
    answers = dry_run_all(kube_cluster, objects, kube_namespace)
    _assert_server_defaults(objects, answers)
    # dry run: nothing was stored
    for obj in objects:
        path = kube_cluster.resource_path(obj["apiVersion"], obj["kind"], namespace=kube_namespace,
                                          name=obj["metadata"]["name"])
        assert not kube_cluster.api().exists(path), f"{path} was persisted by a dry run"


def _trainjob(example: str = "kubeflow-llama32-1b-lora-alpaca.yaml") -> dict[str, Any]:
    job = example_job(next(p for p in EXAMPLES if p.name == example))
    (obj,) = [o for o in _objects(get_target("kubeflow").compile(job)) if o["kind"] == "TrainJob"]
    return obj


def test_dry_run_rejects_wrong_type(kube_cluster: Any, kube_namespace: str) -> None:
    obj = _trainjob()
    obj["spec"]["trainer"]["numNodes"] = "two"
    status, got = dry_run_create(kube_cluster, obj, kube_namespace)
    assert status == 422, got
    assert "spec.trainer.numNodes" in got["message"], got["message"]


def test_pruning_is_detected(kube_cluster: Any, kube_namespace: str) -> None:
    """The comparison above is what catches a field the schema does not know."""
    obj = _trainjob()
    obj["spec"]["trainer"]["notAField"] = 3
    status, got = dry_run_create(kube_cluster, obj, kube_namespace)
    assert status == 201, got
    sent = {**obj, "metadata": {**obj["metadata"], "namespace": kube_namespace}}
    assert check_kept(sent, got) == ["spec.trainer.notAField: pruned"]


@pytest.mark.parametrize("example", [p.name for p in EXAMPLES
                                     if "kubeflow" in applicable(example_job(p))])
def test_dry_run_trainer_v2_1(kube_cluster: Any, kube_namespace: str, example: str) -> None:
    from ftspec.targets import kubeflow

    job = example_job(next(p for p in EXAMPLES if p.name == example))
    objects = _objects(kubeflow.compile_for_version(job, "v2.1"))
    (tj,) = [o for o in objects if o["kind"] == "TrainJob"]
    assert "runtimePatches" not in tj["spec"] and "labels" in tj["spec"]
    kube_cluster.reinstall_trainjob_crd("v2.1.0")
    try:
        answers = dry_run_all(kube_cluster, objects, kube_namespace)
        _assert_server_defaults(objects, answers)
        # the v2.3 shape is pruned by the v2.1 schema: proof that this CRD really is v2.1
        newest = _objects(kubeflow.compile_for_version(job, "v2.3"))
        (tj_new,) = [o for o in newest if o["kind"] == "TrainJob"]
        status, got = dry_run_create(kube_cluster, tj_new, kube_namespace)
        sent = {**tj_new, "metadata": {**tj_new["metadata"], "namespace": kube_namespace}}
        assert status == 201, got
        assert "spec.runtimePatches: pruned" in check_kept(sent, got)
    finally:
        kube_cluster.reinstall_trainjob_crd()


def test_dry_run_with_merge_patches(kube_cluster: Any, kube_namespace: str) -> None:
    """overrides.trainjob / overrides.rayjob reach the server: suspend and a trainer env."""
    from helpers.jobs import make_job

    tj_job = make_job(overrides={"trainjob": {"spec": {
        "suspend": True, "trainer": {"env": [{"name": "NCCL_DEBUG", "value": "INFO"}]}}}})
    rj_job = make_job(deploy={"target": "kuberay", "kuberay": {"image": "acme/ft:1"}},
                      resources={"gpus_per_node": 1}, training={"global_batch_size": 2},
                      overrides={"rayjob": {"spec": {"suspend": True}}})
    objects = (_objects(get_target("kubeflow").compile(tj_job))
               + _objects(get_target("kuberay").compile(rj_job)))
    answers = dry_run_all(kube_cluster, objects, kube_namespace)
    by_kind = {a["kind"]: a for a in answers}
    assert by_kind["TrainJob"]["spec"]["suspend"] is True
    assert by_kind["TrainJob"]["spec"]["trainer"]["env"] == [
        {"name": "NCCL_DEBUG", "value": "INFO"}]
    assert by_kind["RayJob"]["spec"]["suspend"] is True
