"""Multi-node runs on ray / kuberay: the driver's plan (bundles, rank flags, RoCE), the
RayJob's cluster sized for the nodes, and the driver's per-node log lines."""

from __future__ import annotations

import json
import shlex
from typing import Any

import yaml
from ftspec.runtime.ray_nodes.wire import decode_plan, fill, node_states
from ftspec.spec.catalog.accelerators import NODE_LABEL
from ftspec.targets import get_target
from ftspec.targets import ray as ray_target
from ftspec.targets.kuberay import rayjob
from ftspec.targets.ray_nodes import DRIVER_MODULE
from helpers.crd_schema import validation_errors
from helpers.jobs import make_job
from helpers.upstream import RAYJOB_CRD, crd

RAY_SECRET = {"hf_token": {"secretRef": None, "env": "MY_HF_TOKEN"}}
TWO_NODES: dict[str, Any] = {
    "resources": {"nodes": 2, "gpus_per_node": 4, "accelerator": "nvidia-a100-80gb"},
    "method": {"kind": "full", "lora": None}, "training": {"global_batch_size": 16},
    "launcher": "accelerate", "data": {"train": {"uri": "pvc://datasets/alpaca.jsonl"}},
}
SEED_RESOURCES = {"gpu_resource": "auto", "whole_node_resource": "full-worker",
                  "extra_resources": {"scratch-ssd": 2},
                  "roce": {"enabled": True, "hca": "=mlx5_0,mlx5_3", "gid_index": 1,
                           "devices_per_node": 2}}


def plan_of(body: dict[str, Any]) -> dict[str, Any]:
    return decode_plan(body["runtime_env"]["env_vars"]["FTSPEC_NODES"])


def test_ray_submission_runs_the_driver_with_one_bundle_per_node() -> None:
    job = make_job(**TWO_NODES, secrets=RAY_SECRET,
                   deploy={"target": "ray", "ray_nodes": SEED_RESOURCES})
    assert [d.summary for d in get_target("ray").check(job) if d.is_error] == []
    body = ray_target.submission(job)
    assert body["entrypoint"] == f"python -m {DRIVER_MODULE}"
    assert "entrypoint_num_gpus" not in body and "entrypoint_resources" not in body
    plan = plan_of(body)
    assert plan["nodes"] == 2 and plan["strategy"] == "STRICT_SPREAD"
    assert plan["bundle"] == {"CPU": 1.0, "GPU": 4.0, "NVIDIA-A100-SXM4-80GB": 4.0,
                              "RoCE": 1.0, "full-worker": 1.0, "scratch-ssd": 2.0}
    assert plan["env"] == {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0,mlx5_3",
                           "NCCL_IB_GID_INDEX": "1"}
    node1 = fill(plan["argv"], 1, "10.0.0.5", 29400)
    at = node1.index
    assert node1[:2] == ["accelerate", "launch"]
    assert node1[at("--num_machines") + 1] == "2" and node1[at("--machine_rank") + 1] == "1"
    assert node1[at("--main_process_ip") + 1] == "10.0.0.5"
    assert node1[at("--main_process_port") + 1] == "29400"
    assert node1[at("--num_processes") + 1] == "8"
    assert node1[at("--config_file") + 1] == f"{plan['run_dir']}/accelerate.yaml"


def test_default_bundle_asks_for_rays_accelerator_type() -> None:
    job = make_job(**TWO_NODES, secrets=RAY_SECRET,
                   deploy={"target": "ray", "ray_nodes": {"cpus": 16}})
    assert plan_of(ray_target.submission(job))["bundle"] == {
        "CPU": 16.0, "GPU": 4.0, "accelerator_type:A100": 0.001}
    assert plan_of(ray_target.submission(job))["env"] == {}


def test_torchtune_nodes_get_torchrun_rank_and_rendezvous() -> None:
    job = make_job(**{**TWO_NODES, "launcher": "torchtune"}, secrets=RAY_SECRET,
                   deploy={"target": "ray"})
    argv = fill(plan_of(ray_target.submission(job))["argv"], 1, "10.0.0.5", 29400)
    assert argv[:2] == ["tune", "run"]
    flags = dict(zip(argv[2:12:2], argv[3:12:2], strict=True))
    assert flags == {"--nnodes": "2", "--nproc-per-node": "4", "--node-rank": "1",
                     "--rdzv-backend": "static", "--rdzv-endpoint": "10.0.0.5:29400"}
    assert "full_finetune_distributed" in argv


def test_single_node_ray_job_keeps_its_entrypoint_and_seed_resources() -> None:
    job = make_job(secrets=RAY_SECRET, deploy={"target": "ray", "ray_nodes": {
        "gpu_resource": "auto", "whole_node_resource": "full-worker"}})
    body = ray_target.submission(job)
    assert "FTSPEC_NODES" not in body["runtime_env"]["env_vars"]
    assert body["entrypoint_num_gpus"] == 4
    assert body["entrypoint_resources"] == {"NVIDIA-A100-SXM4-80GB": 4.0, "full-worker": 1.0}
    roce = make_job(secrets=RAY_SECRET, deploy={"target": "ray", "ray_nodes": {
        "roce": {"enabled": True}}})
    (warning,) = [d for d in get_target("ray").check(roce) if d.code == "ray.roce-single-node"]
    assert warning.path == ("deploy", "ray_nodes", "roce", "enabled") and not warning.is_error


def test_rayjob_cluster_is_sized_for_the_nodes() -> None:
    job = make_job(**TWO_NODES, deploy={"target": "kuberay", "ray_nodes": SEED_RESOURCES})
    assert [d.summary for d in get_target("kuberay").check(job) if d.is_error] == []
    obj = rayjob(job)
    spec = obj["spec"]
    assert spec["entrypoint"] == f"python -m {DRIVER_MODULE}"
    assert "entrypointNumGpus" not in spec and "entrypointNumCpus" not in spec
    (workers,) = spec["rayClusterSpec"]["workerGroupSpecs"]
    assert workers["replicas"] == workers["minReplicas"] == workers["maxReplicas"] == 2
    (offered,) = shlex.split(workers["rayStartParams"]["resources"])  # one shell word
    assert json.loads(offered) == {
        "NVIDIA-A100-SXM4-80GB": 4.0, "RoCE": 1.0, "full-worker": 1.0, "scratch-ssd": 2.0}
    pod = workers["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 4, "nvidia.com/roce_gdr": 2}
    assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    assert pod["nodeSelector"] == {NODE_LABEL: "NVIDIA-A100-SXM4-80GB"}
    env = yaml.safe_load(spec["runtimeEnvYAML"])["env_vars"]
    assert decode_plan(env["FTSPEC_NODES"])["nodes"] == 2
    assert validation_errors(obj, crd(RAYJOB_CRD), "v1") == []


def test_node_states_from_the_driver_log() -> None:
    log = """noise step=1 loss=2.0
[ftspec-node] rank=0 state=RUNNING node=10.0.0.1 node_id=aa master=10.0.0.1:1234
(NodeRunner pid=1) [ftspec-node] rank=1 state=RUNNING node=10.0.0.2 node_id=bb
[ftspec-node] rank=1 state=FAILED exit_code=-9
[ftspec-node] rank=0 state=STOPPED reason=node
[ftspec-node] rank=* state=STOPPING signal=15
"""
    assert node_states(log) == [
        {"rank": "0", "state": "STOPPED", "node": "10.0.0.1", "node_id": "aa",
         "master": "10.0.0.1:1234", "reason": "node"},
        {"rank": "1", "state": "FAILED", "node": "10.0.0.2", "node_id": "bb",
         "exit_code": "-9"}]
    assert node_states("step=1 loss=2.0") == []


def test_nodes_count_in_batch_memory_explain_and_plan_lines_as_on_kubeflow() -> None:
    """The arithmetic lives in the Job: a two-node run on Ray has the same derived values,
    estimate and plan lines as on Kubeflow, and the driver's plan follows them."""
    from ftspec.compiler.explain import explain_data
    from ftspec.compiler.summary import describe_changes, ml_summary

    on = {t: make_job(**TWO_NODES, secrets=RAY_SECRET if t == "ray" else None,
                      deploy={"target": t, "kubeflow": {"generate_runtime": True}})
          for t in ("kubeflow", "ray", "kuberay")}
    views = {t: explain_data(job) for t, job in on.items()}
    assert views["ray"]["derived"] == views["kubeflow"]["derived"] == views["kuberay"]["derived"]
    assert views["ray"]["memory"] == views["kubeflow"]["memory"]
    assert ml_summary(on["ray"]) == ml_summary(on["kubeflow"])
    job = on["ray"]
    assert (job.nodes, job.world_size, job.gradient_accumulation_steps) == (2, 8, 1)
    plan = plan_of(ray_target.submission(job))
    argv = plan["argv"]
    assert plan["nodes"] == job.nodes and plan["bundle"]["GPU"] == job.gpus_per_node
    assert argv[argv.index("--num_processes") + 1] == str(job.world_size)
    one = make_job(**{**TWO_NODES, "resources": {**TWO_NODES["resources"], "nodes": 1}},
                   secrets=RAY_SECRET, deploy={"target": "ray"})
    lines = describe_changes(ml_summary(one), ml_summary(job))
    assert "nodes 1 -> 2" in lines and "world size 4 -> 8" in lines
    assert "gradient accumulation 2 -> 1" in lines


def test_the_launchers_own_parsers_read_each_nodes_rank_flags() -> None:
    """Node 1's command as the driver fills it, read by tune run's and accelerate's parsers."""
    from accelerate.commands.launch import launch_command_parser
    from torchtune._cli.tune import TuneCLIParser

    tt = make_job(**{**TWO_NODES, "launcher": "torchtune"}, secrets=RAY_SECRET,
                  deploy={"target": "ray"})
    argv = fill(plan_of(ray_target.submission(tt))["argv"], 1, "10.0.0.5", 29400)
    args = TuneCLIParser()._parser.parse_args(argv[1:])
    assert (args.nnodes, args.nproc_per_node, args.node_rank) == ("2", "4", 1)
    assert (args.rdzv_backend, args.rdzv_endpoint) == ("static", "10.0.0.5:29400")
    acc = make_job(**TWO_NODES, secrets=RAY_SECRET, deploy={"target": "ray"})
    argv = fill(plan_of(ray_target.submission(acc))["argv"], 1, "10.0.0.5", 29400)
    parsed = launch_command_parser().parse_args(argv[2:])
    assert (parsed.num_machines, parsed.machine_rank, parsed.num_processes) == (2, 1, 8)
    assert (parsed.main_process_ip, parsed.main_process_port) == ("10.0.0.5", 29400)
    assert parsed.module and parsed.training_script == "ftspec.runtime.hf_sft"


def test_status_shows_each_node() -> None:
    from ftspec.cli.render_status import render_status

    lines = render_status({"address": "ray.job.x", "phase": "Failed", "message": "job FAILED",
                           "platform": {"nodes": node_states(
                               "[ftspec-node] rank=0 state=STOPPED node=10.0.0.1 node_id=a\n"
                               "[ftspec-node] rank=1 state=FAILED node=10.0.0.2 exit_code=-9\n")}})
    assert "  nodes: 0 STOPPED on 10.0.0.1, 1 FAILED on 10.0.0.2 (exit -9)" in lines
