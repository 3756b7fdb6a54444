"""kuberay (RayJob) and ray (Jobs API submission): objects, ids, files, rules."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.spec.ir import Job
from ftspec.targets import get_target
from ftspec.targets import ray as ray_target
from ftspec.targets.kuberay import rayjob
from ftspec.targets.ray_payload import FILES_ENV, launch_for
from helpers.crd_schema import validation_errors
from helpers.jobs import make_job
from helpers.upstream import RAYJOB_CRD, crd

SCHEDULING = {"queue": "team-a", "node_selector": {"pool": "gpu"},
              "tolerations": [{"key": "gpu", "operator": "Exists"}],
              "image_pull_secrets": ["regcred"], "service_account": "ray"}
ACCELERATE = {"launcher": "accelerate", "distributed": {"strategy": "fsdp"},
              "data": {"train": {"uri": "pvc://datasets/alpaca.jsonl"}},
              "deploy": {"target": "kuberay"}}
RAY_SECRET = {"hf_token": {"secretRef": None, "env": "MY_HF_TOKEN"}}


def errors_of(target: str, job: Job) -> list[str]:
    return [f"{'.'.join(map(str, d.path))}: {d.summary}"
            for d in get_target(target).check(job) if d.is_error]


@pytest.mark.parametrize("change", [
    {}, {"deploy": {"scheduling": SCHEDULING, "kuberay": {"active_deadline_seconds": 7200}},
         "resources": {"cpu": "32", "memory": "256Gi"}, "output": {"uri": "pvc://out/run"}},
    ACCELERATE, {"resources": {"gpus_per_node": 0, "accelerator": None},
                 "model": {"dtype": "fp32"}, "training": {"global_batch_size": 2}},
])
def test_rayjob_validates_against_the_crd(change: dict[str, Any]) -> None:
    job = make_job(**change)
    assert errors_of("kuberay", job) == []
    (artifact,) = get_target("kuberay").compile(job)
    assert artifact.path == "rayjob.yaml"
    assert validation_errors(dict(artifact.obj or {}), crd(RAYJOB_CRD), "v1") == []
    assert yaml.safe_load(artifact.content) == artifact.obj


def test_rayjob_cluster_sized_from_resources() -> None:
    job = make_job(deploy={"scheduling": SCHEDULING}, resources={"cpu": "32", "memory": "256Gi"})
    obj = rayjob(job)
    spec = obj["spec"]
    assert obj["apiVersion"] == "ray.io/v1" and obj["kind"] == "RayJob"
    assert obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "ftspec"
    assert spec["shutdownAfterJobFinishes"] is True
    assert spec["ttlSecondsAfterFinished"] == 600
    assert spec["submissionMode"] == "K8sJobMode"
    assert spec["entrypointNumGpus"] == 4
    (workers,) = spec["rayClusterSpec"]["workerGroupSpecs"]
    assert workers["replicas"] == workers["minReplicas"] == workers["maxReplicas"] == 1
    pod = workers["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {
        "cpu": "32", "memory": "256Gi", "nvidia.com/gpu": 4}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                   "pool": "gpu"}
    assert pod["serviceAccountName"] == "ray"
    assert pod["containers"][0]["env"] == [{"name": "HF_TOKEN", "valueFrom": {
        "secretKeyRef": {"name": "hf-token", "key": "token"}}}]
    head = spec["rayClusterSpec"]["headGroupSpec"]
    assert head["template"]["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert head["rayStartParams"]["num-cpus"] == "0"
    assert spec["rayClusterSpec"]["rayVersion"] == "2.41.0"
    assert spec["jobId"] == spec["jobId"].strip() and re.fullmatch(r"[a-z0-9.-]+", spec["jobId"])
    assert all(isinstance(v, str) for v in spec["metadata"].values())


def test_runtime_env_yaml_carries_the_launchers_files() -> None:
    job = make_job(**ACCELERATE)
    spec = rayjob(job)["spec"]
    runtime_env = yaml.safe_load(spec["runtimeEnvYAML"])
    files = json.loads(base64.b64decode(runtime_env["env_vars"][FILES_ENV]))
    launch = launch_for(job)
    assert files == dict(launch.files)
    run_dir = runtime_env["env_vars"]["FTSPEC_RUN_DIR"]
    assert f"--config_file {run_dir}/accelerate.yaml" in spec["entrypoint"]


def test_unpack_step_really_writes_the_files(tmp_path: Path) -> None:
    """Run the entrypoint's first step as Ray would: a shell with runtime_env's variables."""
    job = make_job(**ACCELERATE)
    body = ray_target.submission(job)
    env_vars = dict(body["runtime_env"]["env_vars"])
    env_vars["FTSPEC_RUN_DIR"] = str(tmp_path / "run")
    first = body["entrypoint"].split(" && ")[0]
    assert shlex.split(first)[:2] == ["python", "-c"]
    subprocess.run(first.replace("python", shlex.quote(sys.executable), 1), shell=True,
                   check=True, env={**os.environ, **env_vars})
    written = {p.name: p.read_text() for p in (tmp_path / "run").iterdir()}
    assert written == dict(launch_for(job).files)


@pytest.mark.parametrize(("target", "change", "expected"), [
    ("kuberay", {"metadata": {"name": "a" * 48}, "deploy": {"target": "kubeflow"}},
     "metadata.name: a RayJob name may have at most 47 characters"),
    ("kuberay", {"resources": {"nodes": 2, "gpus_per_node": 0, "accelerator": None},
                 "model": {"dtype": "fp32"}, "training": {"global_batch_size": 4},
                 "deploy": {"target": "kuberay"}},
     "resources.gpus_per_node: torchtune 0.6.1's distributed recipes do not run on CPU"),
    ("kuberay", {"deploy": {"kuberay": {"shutdown_after_job_finishes": False}}},
     "deploy.kuberay.ttl_seconds_after_finished: ttl_seconds_after_finished needs"),
    ("kuberay", {"secrets": RAY_SECRET}, "secrets.hf_token: the kuberay target runs in Kubernetes"),
    ("kuberay", {"model": {"uri": "s3://bucket/llama"}}, "model.uri: the kuberay target reads"),
    ("ray", {}, "secrets.hf_token.secretRef: the Ray Jobs API cannot read a Kubernetes Secret"),
    ("ray", {"resources": {"nodes": 2, "gpus_per_node": 0, "accelerator": None},
             "model": {"dtype": "fp32"}, "training": {"global_batch_size": 4},
             "secrets": RAY_SECRET, "deploy": {"target": "ray"}},
     "resources.gpus_per_node: torchtune 0.6.1's distributed recipes do not run on CPU"),
])
def test_rules_rejected(target: str, change: dict[str, Any], expected: str) -> None:
    found = errors_of(target, make_job(allow_errors=True, **change))
    assert any(e.startswith(expected) for e in found), found


def test_submission_fields_and_ownership() -> None:
    job = make_job(secrets=RAY_SECRET, deploy={"ray": {
        "pip": ["torchtune==0.6.1"], "env_vars": {"HF_HOME": "/cache"},
        "entrypoint_num_cpus": 2}})
    assert errors_of("ray", job) == []
    (artifact,) = get_target("ray").compile(job)
    body = json.loads(artifact.content)
    assert body == artifact.obj
    assert body["entrypoint_num_gpus"] == 4 and body["entrypoint_num_cpus"] == 2
    assert body["entrypoint_resources"] == {"accelerator_type:A100": 0.001}
    assert body["runtime_env"]["pip"] == ["torchtune==0.6.1"]
    env = body["runtime_env"]["env_vars"]
    assert env["HF_HOME"] == "/cache" and env["HF_TOKEN"] == "${MY_HF_TOKEN}"
    assert body["metadata"] == {
        "app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": "tiny-lora",
        "ftspec.dev/name": "tiny-lora",
        "team": "nlp"}  # the spec's labels ride along; no hash of the spec with its defaults
    assert "tune download meta-llama/Llama-3.2-1B-Instruct --output-dir" in body["entrypoint"]
    kwargs = ray_target.submit_kwargs(body)
    assert set(kwargs) == set(body)


def test_submission_id_charset_length_and_determinism() -> None:
    job = make_job(secrets=RAY_SECRET, metadata={"name": "n" * 63})
    first, second = ray_target.submission(job), ray_target.submission(job)
    assert first == second
    sid = first["submission_id"]
    assert re.fullmatch(r"[A-Za-z0-9._-]+", sid) and len(sid) <= 53
    assert sid.startswith("n" * 40 + "-")
    changed = make_job(secrets=RAY_SECRET, metadata={"name": "n" * 63},
                       training={"learning_rate": 1e-4})
    assert ray_target.submission(changed)["submission_id"] != sid


def test_cpu_job_asks_for_a_cpu_not_a_gpu() -> None:
    job = make_job(resources={"gpus_per_node": 0, "accelerator": None}, model={"dtype": "fp32"},
                   training={"global_batch_size": 2}, secrets=RAY_SECRET)
    spec = rayjob(make_job(resources={"gpus_per_node": 0, "accelerator": None},
                           model={"dtype": "fp32"}, training={"global_batch_size": 2}))["spec"]
    assert spec["entrypointNumCpus"] == 1 and "entrypointNumGpus" not in spec
    assert spec["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0][
        "image"] == "rayproject/ray:2.41.0"
    body = ray_target.submission(job)
    assert "entrypoint_num_gpus" not in body and "entrypoint_resources" not in body
