"""Multi-node runs on a REAL two-node Ray cluster on loopback: the harness head plus a second
raylet joined to it (``harness.ray_node``), each a separate Ray node with its own resources.
The compiled tiny spec with ``resources.nodes: 2`` runs through the driver of
``ftspec.runtime.ray_nodes``: one STRICT_SPREAD bundle per node, the accelerate launcher
once per node with its machine rank, gloo over loopback, world size 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from ftspec.runtime.ray_nodes.wire import node_states
from harness.ray_node import RayNode
from helpers.measure import Measurement, TreeSampler
from helpers.polling import wait_for
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.ray, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
LONG = ("--set", "training.max_steps=5000", "--set", "training.epochs=500")
TRAINING = "ftspec.runtime.hf_sft"


@pytest.fixture(scope="module")
def second_node(ray_head: Any) -> Iterator[RayNode]:
    node = RayNode(ray_head, num_cpus=2, resources={"ftspec-test-node-b": 1})
    node.start()
    yield node
    node.stop()


@pytest.fixture
def two_node_sets(workdir: Path, ray_head: Any, second_node: RayNode) -> tuple[str, ...]:
    """The tiny spec on two nodes through the accelerate launcher; absolute paths."""
    tiny = (workdir / ".ftspec/tiny/llama2").resolve()
    values = {
        "deploy.target": "ray", "deploy.ray.address": ray_head.address,
        "resources.nodes": "2", "launcher": "accelerate", "model.tokenizer.uri": "null",
        "method.lora.output": "false",  # TRL refuses an adapter on lm_head
        "training.global_batch_size": "4", "training.micro_batch_size": "2",
        "training.max_steps": "4",
        "model.uri": f"file://{tiny}/model", "data.train.uri": f"file://{tiny}/dataset.jsonl",
        "output.uri": f"file://{workdir / 'ray-output'}",
    }
    return tuple(x for k, v in values.items() for x in ("--set", f"{k}={v}"))


def ftspec(workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([FTSPEC, *args], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def status(workdir: Path, env: dict[str, str], sets: tuple[str, ...]) -> dict[str, Any]:
    done = ftspec(workdir, env, "status", str(SPEC), "--json", *sets)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)
    return dict(entry)


def training_processes() -> list[psutil.Process]:
    """Launchers and training workers of multi-node ftspec runs on this machine: the
    processes with the driver's plan in their environment (other sessions' runs on a shared
    machine have none) that run accelerate or the training entrypoint."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if TRAINING not in cmd and "accelerate" not in cmd:
            continue
        try:
            if "FTSPEC_NODES" in p.environ():
                out.append(p)
        except psutil.Error:
            continue
    return out


def rank_of(p: psutil.Process) -> str | None:
    try:
        env = p.environ()
    except psutil.Error:
        return None
    return env.get("RANK") if TRAINING in " ".join(p.cmdline()) else None


@pytest.fixture(autouse=True)
def _clean(ray_head: Any, workdir: Path, e2e_env: dict[str, str],
           two_node_sets: tuple[str, ...]) -> Iterator[None]:
    yield
    ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *two_node_sets)


def test_two_nodes_train_with_world_size_two_and_plan_is_then_a_noop(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, second_node: RayNode,
        two_node_sets: tuple[str, ...]) -> None:
    m = Measurement("ray_two_nodes_accelerate",
                    f"ftspec apply {SPEC} --auto-approve --wait --set resources.nodes=2 "
                    "--set launcher=accelerate --set deploy.target=ray ...")
    with TreeSampler(m, lambda: ray_head.group_pids() + second_node.group_pids()):
        applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait",
                         *two_node_sets)
    assert applied.returncode == 0, applied.stdout + applied.stderr[-4000:]
    assert m.ranks == [("0", "2"), ("1", "2")], m.ranks  # one worker per machine rank
    st = status(workdir, e2e_env, two_node_sets)
    assert st["phase"] == "Succeeded", st
    nodes = st["platform"]["nodes"]
    assert [n["rank"] for n in nodes] == ["0", "1"], nodes
    assert all(n["state"] == "SUCCEEDED" for n in nodes), nodes
    assert nodes[0]["node_id"] != nodes[1]["node_id"]  # STRICT_SPREAD: two Ray nodes
    logs = ftspec(workdir, e2e_env, "logs", str(SPEC), *two_node_sets).stdout
    # one trainer across both ranks: only rank 0 logs, once per optimizer step, one summary
    assert logs.count("'train_runtime'") == 1, logs[-4000:]
    assert logs.count("{'loss': ") == 4, logs[-4000:]
    assert (workdir / "ray-output").is_dir()
    plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", *two_node_sets)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert training_processes() == []


def live_placement_groups(address: str) -> list[dict[str, Any]]:
    """Placement groups not REMOVED, from the dashboard's state API."""
    with urllib.request.urlopen(f"{address}/api/v0/placement_groups?limit=100&detail=true",
                                timeout=10) as resp:
        rows = json.loads(resp.read())["data"]["result"]["result"]
    return [row for row in rows if row.get("state") != "REMOVED"]


@pytest.fixture
def long_run(workdir: Path, e2e_env: dict[str, str], two_node_sets: tuple[str, ...]
             ) -> tuple[str, ...]:
    """A long two-node run, applied, with both training workers up; its --set args."""
    sets = (*two_node_sets, *LONG)
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *sets)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    wait_for(lambda: {rank_of(p) for p in training_processes()} >= {"0", "1"}, 180,
             "both training workers")
    return sets


def test_one_node_failing_fails_the_job_and_stops_the_other(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, long_run: tuple[str, ...]
        ) -> None:
    time.sleep(3)  # mid-run: the process group is up and steps are running
    (victim,) = [p for p in training_processes() if rank_of(p) == "1"]
    os.kill(victim.pid, 9)
    wait_for(lambda: status(workdir, e2e_env, long_run)["phase"] == "Failed", 120, "Failed")
    st = status(workdir, e2e_env, long_run)
    states = {n["rank"]: n["state"] for n in st["platform"]["nodes"]}
    assert "FAILED" in states.values(), st["platform"]["nodes"]
    wait_for(lambda: training_processes() == [], 30, "no training process left")
    wait_for(lambda: live_placement_groups(ray_head.address) == [], 30, "the bundles released")


def test_destroy_stops_every_node(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, long_run: tuple[str, ...]
        ) -> None:
    assert live_placement_groups(ray_head.address) != []  # the check below can fail
    gone = ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *long_run)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    wait_for(lambda: training_processes() == [], 30, "no training process left")
    wait_for(lambda: live_placement_groups(ray_head.address) == [], 30, "the bundles released")
    assert status(workdir, e2e_env, long_run)["phase"] == "Unknown"


def test_torchtune_ranks_rendezvous_across_two_nodes_with_the_cpu_adaptation(
        workdir: Path, ray_head: Any, second_node: RayNode) -> None:
    """ftspec refuses torchtune on several CPU nodes (its distributed recipes assume CUDA);
    with the repository's test-only CPU adaptation on the nodes' PYTHONPATH, the same driver
    plan really rendezvouses torchrun's two node ranks (world size 2) and trains. The
    submission is the ray target's own, built past the refusal for this proof only."""
    from ftspec.targets import get_target
    from ftspec.targets import ray as ray_target
    from helpers.tinyspec import tiny_job
    from ray.job_submission import JobSubmissionClient

    tiny = (workdir / ".ftspec/tiny/llama2").resolve()
    values = {"resources.nodes": "2", "deploy.target": "ray", "training.max_steps": "null",
              "training.max_steps_per_epoch": "2", "training.global_batch_size": "4",
              "training.micro_batch_size": "2",
              "model.uri": f"file://{tiny}/model", "data.train.uri": f"file://{tiny}/dataset.jsonl",
              "model.tokenizer.uri": f"file://{tiny}/model/tokenizer.model",
              "output.uri": f"file://{workdir / 'tt-output'}"}
    job = tiny_job(workdir, tuple(f"{k}={v}" for k, v in values.items()))
    refused = [d for d in get_target("ray").check(job) if d.is_error]
    assert [d.code for d in refused] == ["ray.torchtune-cpu-nodes"]
    body = ray_target.submission(job)
    body["runtime_env"]["env_vars"]["PYTHONPATH"] = str(Path(__file__).parent / "cpu_compat")
    body["submission_id"] += "-cpu-compat"
    client = JobSubmissionClient(ray_head.address)
    m = Measurement("ray_two_nodes_torchtune", "tune run --nnodes 2 --nproc-per-node 1 "
                    "--node-rank R --rdzv-backend static lora_finetune_distributed (driver)")
    with TreeSampler(m, lambda: ray_head.group_pids() + second_node.group_pids()):
        sid = client.submit_job(**ray_target.submit_kwargs(body))
        wait_for(lambda: str(client.get_job_status(sid)).endswith(
            ("SUCCEEDED", "FAILED", "STOPPED")), 600, "the torchtune job to end")
    logs = client.get_job_logs(sid)
    try:
        assert str(client.get_job_status(sid)).endswith("SUCCEEDED"), logs[-5000:]
        assert m.ranks == [("0", "2"), ("1", "2")], m.ranks
        states = {n["rank"]: n for n in node_states(logs)}
        assert states["0"]["node_id"] != states["1"]["node_id"]
        assert all(n["state"] == "SUCCEEDED" for n in states.values()), states
        assert "Loss" in logs or "loss" in logs, logs[-3000:]
    finally:
        client.delete_job(sid)
