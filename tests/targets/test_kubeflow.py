"""kubeflow target: TrainJob (+ TrainingRuntime, ConfigMap) per Trainer API generation."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from ftspec.spec.ir import Job
from ftspec.targets import get_target
from ftspec.targets import kubeflow as kf
from ftspec.targets.kubeflow_torchtune import RUNTIME_OWNED
from helpers.crd_schema import validation_errors
from helpers.jobs import load_example, make_job
from helpers.upstream import REPO, TRAININGRUNTIME_CRD, TRAINJOB_CRDS, crd

CRDS_BY_VERSION = {"v2.1": ["v2.1.0"], "v2.2": ["v2.3.0", "master"], "v2.3": ["v2.3.0", "master"]}
"""Trainer generation -> CRD snapshots of that API (v2.2's API = v2.3.0's for what we emit)."""
SCHEDULING = {"queue": "team-a", "priority_class": "high", "node_selector": {"pool": "gpu"},
              "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                               "effect": "NoSchedule"}],
              "image_pull_secrets": ["regcred"], "service_account": "trainer"}
ACCELERATE = {"launcher": "accelerate", "distributed": {"strategy": "fsdp"},
              "data": {"train": {"uri": "pvc://datasets/alpaca.jsonl"}},
              "output": {"uri": "pvc://outputs/run1"},
              "deploy": {"target": "kubeflow", "kubeflow": {"generate_runtime": True},
                         "scheduling": {"image": "ghcr.io/acme/ft:1", **SCHEDULING}}}


def errors_of(job: Job) -> list[str]:
    return [f"{'.'.join(map(str, d.path))}: {d.summary}" for d in get_target("kubeflow").check(job)
            if d.is_error]


def objects(job: Job, version: str = "auto") -> dict[str, dict[str, Any]]:
    return {a.path: dict(a.obj or {}) for a in kf.compile_for_version(job, version)}


def trainjob(job: Job, version: str = "auto") -> dict[str, Any]:
    return objects(job, version)["trainjob.yaml"]


def assert_valid(obj: dict[str, Any], crd_path: Path) -> None:
    assert validation_errors(obj, crd_path, "v1alpha1") == []


@pytest.mark.parametrize("version", ["v2.1", "v2.2", "v2.3"])
@pytest.mark.parametrize("case", ["example", "scheduling", "accelerate"])
def test_objects_validate_against_the_crd_of_their_generation(case: str, version: str) -> None:
    if case == "example":
        job = load_example(REPO / "examples/kubeflow-llama32-1b-lora-alpaca.yaml")
    elif case == "scheduling":
        job = make_job(deploy={"scheduling": SCHEDULING}, output={"uri": "pvc://out/x"})
    else:
        job = make_job(**ACCELERATE)
    assert errors_of(job) == []
    objs = objects(job, version)
    for release in CRDS_BY_VERSION[version]:
        assert_valid(objs["trainjob.yaml"], crd(TRAINJOB_CRDS[release]))
    if "trainingruntime.yaml" in objs:
        assert_valid(objs["trainingruntime.yaml"], crd(TRAININGRUNTIME_CRD))


def test_api_generations_differ_and_the_crds_tell_them_apart() -> None:
    job = make_job(deploy={"scheduling": SCHEDULING, "kubeflow": {"active_deadline_seconds": 3600}})
    new, old = trainjob(job, "v2.3"), trainjob(job, "v2.1")
    assert "runtimePatches" in new["spec"] and "podTemplateOverrides" not in new["spec"]
    assert new["spec"]["activeDeadlineSeconds"] == 3600
    assert "podTemplateOverrides" in old["spec"] and "labels" in old["spec"]
    assert "runtimePatches" not in old["spec"] and "activeDeadlineSeconds" not in old["spec"]
    wrong_old = "\n".join(validation_errors(new, crd(TRAINJOB_CRDS["v2.1.0"]), "v1alpha1"))
    assert "'runtimePatches'" in wrong_old and "unexpected" in wrong_old
    wrong_new = "\n".join(validation_errors(old, crd(TRAINJOB_CRDS["master"]), "v1alpha1"))
    assert "podTemplateOverrides" in wrong_new and "'labels'" in wrong_new
    assert kf.resolve_version(job) == kf.NEWEST == "v2.3"


def test_scheduling_goes_into_ftspec_runtime_patch() -> None:
    spec = trainjob(make_job(deploy={"scheduling": SCHEDULING}), "v2.3")["spec"]
    (patch,) = spec["runtimePatches"]
    assert patch["manager"] == "ftspec.dev/ftspec"
    jobs = {j["name"]: j["template"]["spec"]["template"]["spec"]
            for j in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]}
    assert set(jobs) == {"dataset-initializer", "model-initializer", "node"}
    node = jobs["node"]
    assert node["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                    "pool": "gpu"}
    assert jobs["model-initializer"]["nodeSelector"] == {"pool": "gpu"}
    assert node["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists",
                                    "effect": "NoSchedule"}]
    assert node["imagePullSecrets"] == [{"name": "regcred"}]
    assert node["serviceAccountName"] == "trainer"
    old = trainjob(make_job(deploy={"scheduling": SCHEDULING}), "v2.1")["spec"]
    targets = [o["targetJobs"][0]["name"] for o in old["podTemplateOverrides"]]
    assert targets == ["dataset-initializer", "model-initializer", "node"]


def test_metadata_labels_and_kueue() -> None:
    meta = trainjob(make_job(deploy={"scheduling": SCHEDULING}))["metadata"]
    assert meta["name"] == "tiny-lora" and meta["namespace"] == "ml"
    assert meta["labels"] == {
        "app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": "tiny-lora",
        "team": "nlp", "kueue.x-k8s.io/queue-name": "team-a",
        "kueue.x-k8s.io/priority-class": "high"}
    # no hash of the spec with its defaults: a new default must not change the object
    assert "annotations" not in meta
    plain = trainjob(make_job())["metadata"]["labels"]
    assert "kueue.x-k8s.io/queue-name" not in plain


@pytest.mark.parametrize(("family", "runtime"), [
    ("llama3_2-1b", "torchtune-llama3.2-1b"), ("llama3_2-3b", "torchtune-llama3.2-3b"),
    ("qwen2_5-1.5b", "torchtune-qwen2.5-1.5b")])
def test_default_runtime_per_family_has_name_kind_and_group(family: str, runtime: str) -> None:
    uri = {"qwen2_5-1.5b": "hf://Qwen/Qwen2.5-1.5B-Instruct"}.get(family, "hf://m/x")
    job = make_job(model={"family": family, "uri": uri}, resources={"accelerator": "nvidia-h100-80gb"})
    assert trainjob(job)["spec"]["runtimeRef"] == {
        "name": runtime, "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org"}


def test_runtime_required_for_other_families() -> None:
    job = make_job(model={"family": "llama3_1-8b", "uri": "hf://meta-llama/Llama-3.1-8B"},
                   resources={"accelerator": "nvidia-h100-80gb"})
    assert any(e.startswith("deploy.kubeflow.runtime: no upstream torchtune runtime")
               for e in errors_of(job))
    named = make_job(model={"family": "llama3_1-8b", "uri": "hf://meta-llama/Llama-3.1-8B"},
                     deploy={"kubeflow": {"runtime": {"name": "my-rt", "kind": "TrainingRuntime"}}})
    assert trainjob(named)["spec"]["runtimeRef"] == {
        "name": "my-rt", "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"}


def test_torchtune_args_in_sdk_form_without_runtime_owned_keys() -> None:
    trainer = trainjob(make_job())["spec"]["trainer"]
    assert trainer["command"] == ["tune", "run"]
    args = trainer["args"]
    assert all("=" in a or a.startswith("~") for a in args)
    keys = [a.split("=", 1)[0] for a in args]
    assert not set(keys) & set(RUNTIME_OWNED)
    assert keys[:4] == ["dtype", "batch_size", "epochs", "loss"]
    assert "dataset.source=/workspace/dataset" in args  # the repo snapshot, read as the hub
    assert "dataset=torchtune.datasets.instruct_dataset" in args
    assert "model.lora_attn_modules=[q_proj,v_proj,output_proj]" in args
    assert "optimizer.lr=0.0002" in args
    assert not any(a.startswith(("--", "model._component_")) for a in args)
    assert trainer["numNodes"] == 1 and trainer["numProcPerNode"] == 4
    assert trainer["resourcesPerNode"] == {"requests": {"nvidia.com/gpu": 4},
                                           "limits": {"nvidia.com/gpu": 4}}


def test_a_whole_component_override_is_passed_key_by_key() -> None:
    """``tune run`` reads ``dataset={...}`` as ``dataset._component_={...}``: a raw mapping
    for a component goes on the command line key by key, the base's other keys removed."""
    job = make_job(overrides={"torchtune": {"dataset": {
        "_component_": "torchtune.datasets.alpaca_cleaned_dataset", "packed": False}}})
    args = trainjob(job)["spec"]["trainer"]["args"]
    assert not any(a.startswith("dataset={") for a in args)
    assert "dataset=torchtune.datasets.alpaca_cleaned_dataset" in args
    assert "dataset.packed=False" in args


def test_dataset_file_in_a_hub_repo_and_methods_the_controller_reads() -> None:
    job = make_job(data={"train": {"uri": "hf://org/data/train/part.jsonl"}},
                   method={"kind": "qlora", "quantization": {"bits": 4}},
                   resources={"gpus_per_node": 1}, training={"global_batch_size": 2})
    args = trainjob(job)["spec"]["trainer"]["args"]
    assert "dataset.data_files=/workspace/dataset/train/part.jsonl" in args
    assert "dataset.source=json" in args
    assert "model.quantize_base=True" in args and "model.use_dora=False" in args


def test_resources_cpu_memory_and_initializers_by_reference() -> None:
    job = make_job(resources={"cpu": "16", "memory": "128Gi"})
    spec = trainjob(job)["spec"]
    assert spec["trainer"]["resourcesPerNode"]["limits"] == {
        "cpu": "16", "memory": "128Gi", "nvidia.com/gpu": 4}
    init = spec["initializer"]
    assert init["model"]["storageUri"] == "hf://meta-llama/Llama-3.2-1B-Instruct"
    assert init["dataset"]["storageUri"] == "hf://tatsu-lab/alpaca"
    assert init["model"]["env"] == [{"name": "ACCESS_TOKEN", "valueFrom": {
        "secretKeyRef": {"name": "hf-token", "key": "token"}}}]
    direct = make_job(secrets={"hf_token": {"secretRef": {"name": "hf", "key": "ACCESS_TOKEN"}}})
    assert trainjob(direct)["spec"]["initializer"]["dataset"]["secretRef"] == {"name": "hf"}


@pytest.mark.parametrize(("change", "expected"), [
    ({"resources": {"nodes": 2, "gpus_per_node": 4}, "training": {"global_batch_size": 16},
      "deploy": {"target": "ray"}},
     "resources.nodes: LoRA fine-tuning is not supported for multi-node training in TorchTune"),
    ({"method": {"kind": "full", "lora": None}, "resources": {"nodes": 2},
      "training": {"global_batch_size": 16}},
     "resources.nodes: the torchtune runtime trains llama3_2-1b on one node only"),
    ({"overrides": {"torchtune": {"output_dir": "/x"}}},
     'overrides.torchtune.output_dir: "output_dir" is managed by the runtime'),
    ({"overrides": {"torchtune": {"checkpointer.checkpoint_dir": "/x"}}},
     'overrides.torchtune.checkpointer.checkpoint_dir: "checkpointer.checkpoint_dir" is managed'),
    ({"model": {"tokenizer": {"uri": "hf://meta-llama/tok"}}},
     "model.tokenizer.uri: the runtime sets tokenizer.path"),
    ({"model": {"family": "qwen2_5-1.5b", "uri": "hf://Qwen/Qwen2.5-1.5B-Instruct"},
      "method": {"kind": "qlora", "quantization": {"bits": 4}},
      "resources": {"gpus_per_node": 1}, "training": {"global_batch_size": 2}},
     "method.kind: the torchtune runtime has no QLoRA for Qwen2.5 1.5B"),
    ({"deploy": {"kubeflow": {"runtime": {"name": "torchtune-llama3.2-3b"}}}},
     "model.family: runtime torchtune-llama3.2-3b trains llama3_2-3b"),
    ({"data": {"train": {"uri": "pvc://d/x.jsonl"}}},
     "data.train.uri: the dataset initializer reads hf:// or s3://"),
    ({"secrets": {"hf_token": {"secretRef": None, "env": "HF_TOKEN"}}},
     "secrets.hf_token: the kubeflow target runs in Kubernetes"),
    ({"deploy": {"kubeflow": {"generate_runtime": True}}},
     "deploy.kubeflow.generate_runtime: generate_runtime is for the accelerate launcher"),
])
def test_runtime_rules_rejected_before_submission(change: dict[str, Any], expected: str) -> None:
    job = make_job(allow_errors=True, **change)
    found = errors_of(job)
    assert any(e.startswith(expected) for e in found), found


def test_deadline_needs_v2_2() -> None:
    job = make_job(deploy={"kubeflow": {"active_deadline_seconds": 60}})
    assert kf.check_for_version(job, "v2.3") == []
    (diag,) = kf.check_for_version(job, "v2.1")
    assert diag.path == ("deploy", "kubeflow", "active_deadline_seconds")


def test_generated_runtime_configmap_and_trainjob() -> None:
    job = make_job(**ACCELERATE)
    objs = objects(job)
    assert list(objs) == ["configmap.yaml", "trainingruntime.yaml", "trainjob.yaml"]
    cm, rt, tj = objs["configmap.yaml"], objs["trainingruntime.yaml"], objs["trainjob.yaml"]
    assert tj["spec"]["runtimeRef"] == {"name": "tiny-lora-runtime", "kind": "TrainingRuntime",
                                        "apiGroup": "trainer.kubeflow.org"}
    assert "initializer" not in tj["spec"] and "command" not in tj["spec"]["trainer"]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}
            } in tj["spec"]["trainer"]["env"]
    (rjob,) = rt["spec"]["template"]["spec"]["replicatedJobs"]
    pod = rjob["template"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"][:4] == ["accelerate", "launch", "--config_file",
                                        "/etc/ftspec/accelerate.yaml"]
    assert "accelerate.yaml" in cm["data"] and cm["data"]["accelerate.yaml"].startswith("#")
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols[mounts["/etc/ftspec"]]["configMap"]["name"] == cm["metadata"]["name"]
    assert vols[mounts["/mnt/datasets"]]["persistentVolumeClaim"]["claimName"] == "datasets"
    assert vols[mounts["/mnt/outputs"]]["persistentVolumeClaim"]["claimName"] == "outputs"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                                   "pool": "gpu"}
    assert rjob["template"]["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}


def test_multi_node_accelerate_takes_rank_from_the_torch_plugin() -> None:
    job = make_job(**ACCELERATE, resources={"nodes": 2, "gpus_per_node": 4},
                   training={"global_batch_size": 16})
    rt = objects(job)["trainingruntime.yaml"]
    command = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"]["spec"]["containers"][0]["command"]
    pairs = dict(itertools.pairwise(command))
    assert pairs["--machine_rank"] == "$(PET_NODE_RANK)"
    assert pairs["--main_process_ip"] == "$(PET_MASTER_ADDR)"
    assert pairs["--main_process_port"] == "$(PET_MASTER_PORT)"
    assert command.index("--main_process_port") < command.index("-m")
    assert not any("${" in part for part in command)


def test_accelerate_on_a_named_runtime_mounts_files_by_patch() -> None:
    job = make_job(**{**ACCELERATE, "deploy": {"target": "kubeflow", "kubeflow": {
        "runtime": {"name": "torch-distributed"}}}})
    objs = objects(job)
    assert list(objs) == ["configmap.yaml", "trainjob.yaml"]
    spec = objs["trainjob.yaml"]["spec"]
    assert spec["trainer"]["command"][3] == "/etc/ftspec/accelerate.yaml"
    node = spec["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    assert node["name"] == "node"
    assert node["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0][
        "mountPath"] == "/etc/ftspec"


def test_generated_runtime_needs_an_image() -> None:
    job = make_job(**{**ACCELERATE, "deploy": {"target": "kubeflow",
                                               "kubeflow": {"generate_runtime": True}}})
    assert any(e.startswith("deploy.scheduling.image:") for e in errors_of(job))


def test_deterministic_and_content_matches_obj() -> None:
    import yaml

    for job in (make_job(), make_job(**ACCELERATE)):
        first = kf.compile_for_version(job, "auto")
        second = get_target("kubeflow").compile(job)
        assert [(a.path, a.content) for a in first] == [(a.path, a.content) for a in second]
        for artifact in first:
            assert yaml.safe_load(artifact.content) == artifact.obj
            assert "&id" not in artifact.content


def test_processes_per_node_must_match_gpus_on_a_torchtune_runtime() -> None:
    job = make_job(resources={"gpus_per_node": 4, "processes_per_node": 1})
    assert "resources.processes_per_node" in "\n".join(errors_of(job))
    # the local torchtune launcher runs it as asked (tune run on one process)
    assert not [d for d in get_target("torchtune").check(job) if d.is_error]
