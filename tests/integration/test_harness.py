"""Tests of the real-component harness itself: the pinned kube-apiserver + etcd with upstream CRDs, Ray head."""

from __future__ import annotations

import json
import secrets
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from harness import procs
from harness.controlplane_build import PINS
from harness.fixtures import _registry
from harness.kube import KubeApiError, KubeCluster
from harness.ray_head import RayHead

TRAINER = "trainer.kubeflow.org"
TRAINER_V = "v1alpha1"
EXPECTED_CRDS = {
    "trainjobs.trainer.kubeflow.org",
    "trainingruntimes.trainer.kubeflow.org",
    "clustertrainingruntimes.trainer.kubeflow.org",
    "rayjobs.ray.io",
    "rayclusters.ray.io",
}


# --------------------------------------------------------------------------- helpers


def _client(cluster: KubeCluster, context: str = "admin") -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=str(cluster.kubeconfig_path), context=context)


def _trainjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{TRAINER}/{TRAINER_V}",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torchtune-llama3.2-1b"}},
    }


def _schema_text(crd: dict[str, Any]) -> str:
    return json.dumps([v["schema"] for v in crd["spec"]["versions"]])


# --------------------------------------------------------------------------- kube


@pytest.mark.kube
def test_apiserver_up_and_crds_established(kube_cluster: KubeCluster) -> None:
    from kubernetes import client

    api = _client(kube_cluster)
    assert client.VersionApi(api).get_code().git_version == PINS.kubernetes
    crds = {c.metadata.name: c for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items}
    assert set(crds) >= EXPECTED_CRDS
    for name in EXPECTED_CRDS:
        conditions = {c.type: c.status for c in crds[name].status.conditions}
        assert conditions.get("Established") == "True", name
    trainjob = crds["trainjobs.trainer.kubeflow.org"]
    assert [v.name for v in trainjob.spec.versions if v.served] == [TRAINER_V]
    assert "x-kubernetes-validations" in json.dumps(kube_cluster.crd(trainjob.metadata.name))  # verbatim: CEL kept
    assert [v.name for v in crds["rayjobs.ray.io"].spec.versions if v.served] == ["v1", "v1alpha1"]
    # the kubeconfig verifies TLS against the generated CA (no insecure-skip-tls-verify)
    assert api.configuration.verify_ssl is True
    assert api.configuration.ssl_ca_cert
    with pytest.raises(urllib.error.URLError):  # the system trust store does not know that CA
        urllib.request.urlopen(kube_cluster.server + "/readyz", context=ssl.create_default_context(), timeout=5)


@pytest.mark.kube
def test_trainjob_server_side_apply_gets_crd_defaults(kube_cluster: KubeCluster, kube_namespace: str) -> None:
    from kubernetes import client

    objects = client.CustomObjectsApi(_client(kube_cluster))
    # kubernetes-client 37 maps only HTTP 200 for this call: an apply that *creates* (201) would
    # return None, so read the raw response.
    response = objects.patch_namespaced_custom_object(
        TRAINER,
        TRAINER_V,
        kube_namespace,
        "trainjobs",
        "tj-defaults",
        _trainjob("tj-defaults"),
        field_manager="ftspec-test",
        force=True,
        _content_type="application/apply-patch+yaml",
        _preload_content=False,
    )
    assert response.status == 201
    created = json.loads(response.data)
    spec = created["spec"]
    assert spec["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    assert spec["runtimeRef"] == {
        "name": "torchtune-llama3.2-1b",
        "kind": "ClusterTrainingRuntime",
        "apiGroup": TRAINER,
    }
    managers = {entry["manager"] for entry in created["metadata"]["managedFields"]}
    assert managers == {"ftspec-test"}
    # the stdlib helper sees the same object
    fetched = kube_cluster.get_object(f"{TRAINER}/{TRAINER_V}", "TrainJob", "tj-defaults", namespace=kube_namespace)
    assert fetched["metadata"]["uid"] == created["metadata"]["uid"]


@pytest.mark.kube
def test_torchtune_cluster_training_runtimes_installed(kube_cluster: KubeCluster) -> None:
    from kubernetes import client

    objects = client.CustomObjectsApi(_client(kube_cluster))
    runtimes = objects.list_cluster_custom_object(TRAINER, TRAINER_V, "clustertrainingruntimes")["items"]
    names = {r["metadata"]["name"] for r in runtimes}
    assert {"torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b"} <= names
    llama = next(r for r in runtimes if r["metadata"]["name"] == "torchtune-llama3.2-1b")
    assert llama["metadata"]["labels"]["trainer.kubeflow.org/framework"] == "torchtune"
    assert llama["spec"]["mlPolicy"]["numNodes"] == 1


@pytest.mark.kube
def test_limited_user_forbidden_until_granted(kube_cluster: KubeCluster, kube_namespace: str) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    limited = client.CustomObjectsApi(_client(kube_cluster, "limited"))
    limited2 = client.CustomObjectsApi(_client(kube_cluster, "limited2"))
    for api in (limited, limited2):
        with pytest.raises(ApiException) as err:
            api.list_namespaced_custom_object(TRAINER, TRAINER_V, kube_namespace, "trainjobs")
        assert err.value.status == 403

    rbac = client.RbacAuthorizationV1Api(_client(kube_cluster))
    rbac.create_namespaced_role(
        kube_namespace,
        {
            "metadata": {"name": "trainjob-reader"},
            "rules": [{"apiGroups": [TRAINER], "resources": ["trainjobs"], "verbs": ["get", "list", "watch"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        kube_namespace,
        {
            "metadata": {"name": "limited-reads-trainjobs"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "trainjob-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}],
        },
    )
    deadline = time.monotonic() + 10  # the RBAC authorizer reads from an informer cache
    while True:
        try:
            assert limited.list_namespaced_custom_object(TRAINER, TRAINER_V, kube_namespace, "trainjobs")["items"] == []
            break
        except ApiException as exc:
            if exc.status != 403 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with pytest.raises(ApiException) as err:  # granted only to list, and only to `limited`
        limited.create_namespaced_custom_object(TRAINER, TRAINER_V, kube_namespace, "trainjobs", _trainjob("x"))
    assert err.value.status == 403
    with pytest.raises(ApiException) as err:
        limited2.list_namespaced_custom_object(TRAINER, TRAINER_V, kube_namespace, "trainjobs")
    assert err.value.status == 403


@pytest.mark.kube
def test_kill_and_restart_apiserver_preserves_objects(kube_cluster: KubeCluster, kube_namespace: str) -> None:
    created = kube_cluster.apply(_trainjob("tj-survives"), namespace=kube_namespace)
    server = kube_cluster.server
    kube_cluster.kill_apiserver()
    assert not kube_cluster.running
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        kube_cluster.request("GET", "/readyz")
    kube_cluster.restart_apiserver()
    assert kube_cluster.running
    assert kube_cluster.server == server  # same port
    fetched = kube_cluster.get_object(f"{TRAINER}/{TRAINER_V}", "TrainJob", "tj-survives", namespace=kube_namespace)
    assert fetched["metadata"]["uid"] == created["metadata"]["uid"]
    assert fetched["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"


@pytest.fixture
def restore_trainjob_crd(kube_cluster: KubeCluster) -> Iterator[None]:
    yield
    if kube_cluster.running and kube_cluster.installed_trainjob_crd_version is not None:
        kube_cluster.reinstall_trainjob_crd(None)


@pytest.mark.kube
def test_reinstall_v2_1_0_trainjob_crd(
    kube_cluster: KubeCluster, kube_namespace: str, restore_trainjob_crd: None
) -> None:
    name = "trainjobs.trainer.kubeflow.org"
    master = kube_cluster.crd(name)
    assert "podTemplateOverrides" not in _schema_text(master)
    assert "runtimePatches" in _schema_text(master)
    kept = kube_cluster.apply(_trainjob("tj-kept"), namespace=kube_namespace)

    kube_cluster.reinstall_trainjob_crd("v2.1.0")
    old = kube_cluster.crd(name)
    assert "podTemplateOverrides" in _schema_text(old)
    assert "runtimePatches" not in _schema_text(old)
    assert kube_cluster.installed_trainjob_crd_version == "v2.1.0"
    fetched = kube_cluster.get_object(f"{TRAINER}/{TRAINER_V}", "TrainJob", "tj-kept", namespace=kube_namespace)
    assert fetched["metadata"]["uid"] == kept["metadata"]["uid"]  # in-place update keeps objects

    kube_cluster.reinstall_trainjob_crd(None)
    back = kube_cluster.crd(name)
    assert "podTemplateOverrides" not in _schema_text(back)
    assert kube_cluster.installed_trainjob_crd_version is None


@pytest.mark.kube
def test_kube_namespace_is_removed_with_its_objects(kube_cluster: KubeCluster) -> None:
    name = kube_cluster.create_namespace(f"t-ns-cleanup-{secrets.token_hex(3)}")
    kube_cluster.apply(_trainjob("tj-in-ns"), namespace=name)
    kube_cluster.delete_namespace(name)
    with pytest.raises(KubeApiError) as err:
        kube_cluster.request("GET", f"/api/v1/namespaces/{name}")
    assert err.value.status == 404
    leftovers = kube_cluster.request("GET", f"/apis/{TRAINER}/{TRAINER_V}/trainjobs")["items"]
    assert all(tj["metadata"]["namespace"] != name for tj in leftovers)


# --------------------------------------------------------------------------- ray


@pytest.mark.ray
def test_heavy_components_run_one_at_a_time(ray_head: RayHead, request: pytest.FixtureRequest) -> None:
    assert ray_head.running
    others = {n: c for n, c in _registry(request.config).components.items() if n != "ray_head"}
    if not others:
        pytest.skip("no other heavy component was used in this session")
    assert not any(c.running for c in others.values()), "kube_cluster must be stopped while ray_head runs"


@pytest.mark.ray
def test_ray_head_runs_a_job_to_success(ray_head: RayHead) -> None:
    from ray.job_submission import JobStatus, JobSubmissionClient

    jobs = JobSubmissionClient(ray_head.address)
    submission_id = f"ftspec-harness-{secrets.token_hex(4)}"
    returned = jobs.submit_job(
        entrypoint="python -c \"print('harness-job-' + str(6 * 7))\"",
        submission_id=submission_id,
        metadata={"owner": "ftspec-harness-test"},
    )
    assert returned == submission_id
    deadline = time.monotonic() + 120
    status = jobs.get_job_status(submission_id)
    while not status.is_terminal():
        assert time.monotonic() < deadline, f"job still {status} after 120 s"
        time.sleep(0.5)
        status = jobs.get_job_status(submission_id)
    logs = jobs.get_job_logs(submission_id)
    assert status == JobStatus.SUCCEEDED, logs
    assert "harness-job-42" in logs
    info = jobs.get_job_info(submission_id)
    assert info.metadata == {"owner": "ftspec-harness-test"}


@pytest.mark.ray
def test_ray_head_stop_leaves_no_process_of_its_group(ray_head: RayHead) -> None:
    """Stops the session head; the fixture registry starts it again for later tests that need it."""
    pgid = ray_head.pid
    members = ray_head.group_pids()
    tracked = {pid: procs.start_time(pid) for pid in [*members, *procs.descendants(pgid)]}
    assert len(members) > 3  # gcs_server, raylet, dashboard, ... all in our group
    ray_head.stop()
    assert not ray_head.running
    assert procs.process_group_members(pgid) == []
    assert [pid for pid, started in tracked.items() if procs.is_alive(pid, started)] == []
