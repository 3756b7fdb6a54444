"""plan and apply of many specs against an API server that throttles (priority and fairness with
a level that refuses what it cannot admit at once: 429 + Retry-After). ftspec meets 429s,
waits as told, finishes, and loses nothing: every TrainJob exists and a second plan says no
changes. The 300-spec figures come from ``bench/kube_load.py``; this is its small version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness.kube import KubeCluster
from helpers.kube_load import grant_limited, throttle_user, throttled_flags, write_specs

pytestmark = [pytest.mark.kube, pytest.mark.slow]
SPECS = 20


def _ftspec(args: list[str], env: dict[str, str], stats: Path) -> tuple[int, dict[str, int]]:
    stats.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-m", "ftspec.cli", *args], check=False,
                          env={**env, "FTSPEC_KUBE_STATS": str(stats)}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode in (0, 2), proc.stdout[-2000:] + proc.stderr[-2000:]
    counts: dict[str, int] = {}
    for line in stats.read_text().splitlines():
        for key, value in json.loads(line).items():
            counts[key] = counts.get(key, 0) + int(value)
    return proc.returncode, counts


def test_plan_and_apply_finish_under_429s_and_lose_nothing(tmp_path: Path) -> None:
    with KubeCluster(apiserver_flags=throttled_flags(1, 1)) as cluster:
        grant_limited(cluster, "load")
        throttle_user(cluster)
        specs = [str(p) for p in write_specs(tmp_path, SPECS)]
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_for("limited")),
               "FTSPEC_CACHE_DIR": str(tmp_path / "cache"), "NO_COLOR": "1"}
        env.pop("FTSPEC_KUBE_CONTEXT", None)
        stats = tmp_path / "stats.jsonl"
        code, planned = _ftspec(["plan", "-n", "load", "--detailed-exitcode", *specs], env, stats)
        assert code == 2
        code, applied = _ftspec(["apply", "-n", "load", "--auto-approve", *specs], env, stats)
        assert code == 0
        assert planned["throttled"] + applied["throttled"] > 0  # the server did refuse
        assert planned["retries"] >= planned["throttled"]
        listed = cluster.request("GET", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/load/"
                                 "trainjobs")
        assert sorted(i["metadata"]["name"] for i in listed["items"]) == [
            f"load-{i:03d}" for i in range(SPECS)]
        code, _ = _ftspec(["plan", "-n", "load", "--detailed-exitcode", *specs], env, stats)
        assert code == 0  # nothing lost, nothing half-applied
