"""A sweep on a REAL Ray head (harness ``ray_head``): each point is a Jobs API job of its own
(its own submission id and spec-id label), trained to completion, compared; a value removed
from the grid plans its job's delete; destroy of the shrunk grid deletes every point's job."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from helpers.tinyspec import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.ray, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
SPEC = "examples/tiny-sweep.yaml"
GRID = ("[1.0e-2, 3.0e-3, 1.0e-3]", "[1.0e-2, 1.0e-3]")  # two points: a small suite


def ftspec(workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([FTSPEC, *args], cwd=workdir, env=env, capture_output=True,
                          check=False, text=True, timeout=900)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def owned(address: str) -> dict[str, dict[str, Any]]:
    """submission id -> metadata of the ftspec jobs on the head, from the Jobs API."""
    with urllib.request.urlopen(f"{address}/api/jobs/", timeout=10) as resp:
        listed = json.loads(resp.read())
    return {j["submission_id"]: {**(j.get("metadata") or {}), "status": j["status"]}
            for j in listed
            if (j.get("metadata") or {}).get("app.kubernetes.io/managed-by") == "ftspec"}


def test_each_point_is_a_ray_job_of_its_own(workdir: Path, e2e_env: dict[str, str],
                                            ray_head: Any) -> None:
    text = (REPO / SPEC).read_text(encoding="utf-8")
    assert GRID[0] in text
    (workdir / SPEC).write_text(text.replace(*GRID), encoding="utf-8")
    tiny = (workdir / ".ftspec/tiny/llama2").resolve()
    values = {"deploy.target": "ray", "deploy.ray.address": ray_head.address,
              "model.uri": f"file://{tiny}/model",
              "model.tokenizer.uri": f"file://{tiny}/model/tokenizer.model",
              "data.train.uri": f"file://{tiny}/dataset.jsonl",
              "output.uri": f"file://{workdir / 'ray-output'}"}
    sets = tuple(x for k, v in values.items() for x in ("--set", f"{k}={v}"))
    before = set(owned(ray_head.address))
    try:
        applied = ftspec(workdir, e2e_env, "apply", SPEC, "--auto-approve", "--wait", *sets)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        jobs = {sid: meta for sid, meta in owned(ray_head.address).items()
                if sid not in before}
        labels = sorted(meta["ftspec.dev/spec-id"] for meta in jobs.values())
        assert labels == ["tiny-sweep-lr-1e-2", "tiny-sweep-lr-1e-3"], jobs
        assert all(meta["status"] == "SUCCEEDED" for meta in jobs.values()), jobs
        assert sorted(sid.rsplit("-", 1)[0] for sid in jobs) == labels  # name-<content hash>

        got = json.loads(ftspec(workdir, e2e_env, "output", SPEC, "--compare", "--json",
                                *sets).stdout)
        assert got["fields"] == ["training.learning_rate"]
        for row in got["points"]:
            assert row["phase"] == "Succeeded" and row["metrics"]["steps"] == 16
            assert math.isfinite(row["final_loss"]) and row["validity"] == "ok"
            assert (workdir / "ray-output" / row["name"][11:]
                    / "epoch_0/adapter_model.safetensors").stat().st_size > 0
        plan = ftspec(workdir, e2e_env, "plan", SPEC, "--detailed-exitcode", *sets)
        assert plan.returncode == 0, plan.stdout + plan.stderr
        # a value removed from the grid: its point's job is planned for deletion, and
        # destroy (below, of the shrunk grid) deletes both points' jobs
        (workdir / SPEC).write_text(text.replace(GRID[0], "[1.0e-2]"), encoding="utf-8")
        shrunk = ftspec(workdir, e2e_env, "plan", SPEC, "--json", *sets)
        assert shrunk.returncode == 0, shrunk.stderr
        actions = {c["address"]: c["action"] for c in json.loads(shrunk.stdout)["changes"]}
        assert actions == {"ray.job.tiny-sweep-lr-1e-2": "no-op",
                           "ray.job.tiny-sweep-lr-1e-3": "delete"}, actions
    finally:
        gone = ftspec(workdir, e2e_env, "destroy", SPEC, "--auto-approve", *sets)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert set(owned(ray_head.address)) <= before
    shutil.rmtree(workdir / "ray-output", ignore_errors=True)
