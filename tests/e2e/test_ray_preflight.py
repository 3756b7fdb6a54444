"""The Ray resource preflight against the REAL Ray head of the harness (``ray_head``: one
CPU-only node): ``ftspec plan`` of the quickstart spec on deploy.target ray plans clean; the
same spec asking for GPUs stops at plan time with the error at ``resources.gpus_per_node``,
saying what the cluster's nodes have, and nothing is submitted."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from helpers.polling import wait_for
from helpers.tinyspec import SPEC, ray_sets

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

FTSPEC = str(Path(sys.executable).parent / "ftspec")


def alive_nodes(address: str) -> int:
    with urllib.request.urlopen(address + "/api/v0/nodes?detail=1", timeout=10) as resp:
        rows = json.load(resp)["data"]["result"]["result"]
    return sum(1 for row in rows if row.get("state") == "ALIVE")


def jobs_since(address: str, since_s: float) -> set[str]:
    """Jobs the head says were submitted at or after ``since_s`` (its clock is this
    machine's): another test's job that the head lists late is not one of them."""
    with urllib.request.urlopen(address + "/api/jobs/", timeout=10) as resp:
        return {str(j["submission_id"]) for j in json.load(resp)
                if (j.get("start_time") or 0) >= since_s * 1000}


def plan(workdir: Path, env: dict[str, str], ray_head: Any, *extra: str
         ) -> subprocess.CompletedProcess[str]:
    sets = ray_sets(workdir, ray_head.address)
    done = subprocess.run([FTSPEC, "plan", str(SPEC), *sets, *extra], cwd=workdir, env=env,
                          check=False,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_plan_locates_gpus_the_cpu_cluster_lacks(workdir: Path, e2e_env: dict[str, str],
                                                 ray_head: Any) -> None:
    wait_for(lambda: alive_nodes(ray_head.address), timeout=60, what="the head node registers")
    since = time.time()

    clean = plan(workdir, e2e_env, ray_head)
    assert clean.returncode in (0, 2), clean.stdout + clean.stderr  # 2: changes to make
    assert "error" not in clean.stderr.lower(), clean.stderr
    assert "Plan: 1 to add" in clean.stdout, clean.stdout
    assert "Warning" not in clean.stdout, clean.stdout  # the nodes were read and checked

    spec = workdir / SPEC
    spec.write_text(spec.read_text().replace(
        "gpus_per_node: 0", "gpus_per_node: 4\n  accelerator: nvidia-a100-80gb"))
    gpus = plan(workdir, e2e_env, ray_head, "--set", "training.micro_batch_size=1")
    assert gpus.returncode == 1, gpus.stdout + gpus.stderr
    lines = spec.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "gpus_per_node:" in text)
    col = lines[line - 1].index("4") + 1
    assert (f"{SPEC}:{line}:{col}: error: resources.gpus_per_node: the cluster's nodes have "
            "GPU 0; the job needs 4") in gpus.stderr, gpus.stderr
    assert (f"{SPEC}:{line + 1}:16: error: resources.accelerator: the cluster's nodes have "
            "accelerator_type:A100 0; the job needs 0.001") in gpus.stderr, gpus.stderr
    assert jobs_since(ray_head.address, since) == set()  # plan submits nothing
