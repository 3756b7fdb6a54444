"""The Ray backend against a REAL Ray head (harness ``ray_head``: ``ray start --head`` on
loopback, stopped by its PID): the compiled tiny torchtune job runs to SUCCEEDED through the
Jobs API; replace, cleanup of renamed specs, drift, foreign jobs and an unreachable head."""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler.pace import MIN_STEPS
from helpers.follow import follow
from helpers.measure import Measurement, TreeSampler
from helpers.polling import wait_for
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.ray, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
LONG = ("--set", "training.max_steps=null", "--set", "training.epochs=5",
        "--set", "training.max_steps_per_epoch=32")


@pytest.fixture
def ray_sets(workdir: Path, ray_head: Any) -> tuple[str, ...]:
    """deploy.target ray at the test head; absolute paths (a Ray job has its own cwd)."""
    tiny = (workdir / ".ftspec/tiny/llama2").resolve()
    out = workdir / "ray-output"
    values = {
        "deploy.target": "ray", "deploy.ray.address": ray_head.address,
        "model.uri": f"file://{tiny}/model",
        "model.tokenizer.uri": f"file://{tiny}/model/tokenizer.model",
        "data.train.uri": f"file://{tiny}/dataset.jsonl", "output.uri": f"file://{out}",
    }
    return tuple(x for k, v in values.items() for x in ("--set", f"{k}={v}"))


def ftspec(workdir: Path, env: dict[str, str], *args: str, timeout: float = 600
           ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([FTSPEC, *args], check=False, cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def status(workdir: Path, env: dict[str, str], *sets: str) -> dict[str, Any]:
    done = ftspec(workdir, env, "status", str(SPEC), "--json", *sets)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)
    return dict(entry)


def jobs(address: str) -> dict[str, dict[str, Any]]:
    """submission id -> job, straight from the Jobs API."""
    with urllib.request.urlopen(f"{address}/api/jobs/", timeout=10) as resp:
        return {j["submission_id"]: j for j in json.loads(resp.read())}



def owned_ids(address: str) -> set[str]:
    return {sid for sid, j in jobs(address).items()
            if (j.get("metadata") or {}).get("app.kubernetes.io/managed-by") == "ftspec"}


@pytest.fixture(autouse=True)
def _clean_head(ray_head: Any) -> Any:
    """Each test starts and ends with no ftspec jobs on the shared head."""
    from ray.job_submission import JobSubmissionClient

    def clean() -> None:
        client = JobSubmissionClient(ray_head.address)
        for sid in owned_ids(ray_head.address):
            client.stop_job(sid)
            wait_for(lambda sid=sid: str(client.get_job_status(sid)) in (
                "SUCCEEDED", "FAILED", "STOPPED", "JobStatus.SUCCEEDED", "JobStatus.FAILED",
                "JobStatus.STOPPED"), 120, f"{sid} to stop")
            client.delete_job(sid)

    clean()
    yield
    clean()


def test_tiny_torchtune_job_succeeds_through_the_jobs_api(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, ray_sets: tuple[str, ...]
        ) -> None:
    m = Measurement("ray_apply_wait_tiny", f"ftspec apply {SPEC} --set deploy.target=ray ...")
    with TreeSampler(m, lambda: ray_head.group_pids()):
        applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait",
                         "--json", *ray_sets)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    # --json: one progress event per step (JSON lines on stderr), the result on stdout
    events = [json.loads(line) for line in applied.stderr.splitlines()
              if line.startswith('{"event": "progress"')]
    assert [e["step"] for e in events] == list(range(1, 17)), applied.stderr
    assert all(e["total_steps"] == 16 and e["lr"] is not None for e in events), events[-1]
    assert json.loads(applied.stdout)["status"][0]["phase"] == "Succeeded"
    st = status(workdir, e2e_env, *ray_sets)
    assert st["phase"] == "Succeeded", st
    assert st["platform"]["status"] == "SUCCEEDED"
    assert math.isfinite(st["metrics"]["final_loss"]) and st["metrics"]["step"] == 16
    (sid,) = owned_ids(ray_head.address)
    assert sid == st["platform"]["submission_id"] and sid.startswith("tiny-local-")
    assert (workdir / "ray-output/epoch_0/adapter_model.safetensors").stat().st_size > 0
    produced = json.loads(ftspec(workdir, e2e_env, "output", str(SPEC), "--json",
                                 *ray_sets).stdout)
    assert produced["adapter"] == str(workdir / "ray-output/epoch_0/adapter_model.safetensors")
    assert produced["metrics"]["steps"] == 16 and produced["metrics"]["wall_time_s"] > 0
    # measured from the job's log: torchtune's progress bar gives the training time
    assert produced["measured"]["validity"] == "ok"
    assert 0 < produced["measured"]["train_runtime_s"] <= produced["metrics"]["wall_time_s"]
    followed = ftspec(workdir, e2e_env, "logs", str(SPEC), "--follow", *ray_sets)
    assert followed.returncode == 0 and "Step 16 | loss:" in followed.stdout

    plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", *ray_sets)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    again = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *ray_sets)
    assert again.returncode == 0 and owned_ids(ray_head.address) == {sid}  # no duplicate
    logs = ftspec(workdir, e2e_env, "logs", str(SPEC), *ray_sets)
    assert "Loss: " in logs.stdout


def test_logs_follow_and_status_of_a_running_job(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, ray_sets: tuple[str, ...]
        ) -> None:
    """While the job runs, `status` gives a time left from the pace so far (not 0s) and
    `logs --follow` shows the steps as they are logged; it exits once the job has ended."""
    # 160 steps (the tiny run does tens a second on an idle machine): time to look mid-run
    sets = (*ray_sets, "--set", "training.epochs=10")
    total = 160
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *sets)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    (sid,) = owned_ids(ray_head.address)

    running: list[dict[str, Any]] = []  # a status taken mid-run, once it has a pace

    def job_ended() -> bool:
        if not running:
            st = status(workdir, e2e_env, *sets)
            # one step has no pace yet (pace.MIN_STEPS): no time left is right at step 1
            if st["phase"] == "Running" and MIN_STEPS <= st["metrics"].get("step", 0) < total:
                running.append(st)
        return jobs(ray_head.address)[sid]["status"] in ("SUCCEEDED", "FAILED", "STOPPED")

    got = follow([FTSPEC, "logs", str(SPEC), "--follow", *sets], workdir, e2e_env,
                 job_ended)
    assert got.returncode == 0 and got.ended_at is not None and got.exited_at is not None
    steps = [(at, int(m.group(1))) for at, line in got.lines
             if (m := re.search(r"Step (\d+) \| loss:", line))]
    assert [step for _, step in steps] == list(range(1, total + 1)), got.lines
    # streamed, not dumped at the end: the steps came in several reads while the job ran
    assert steps[0][0] < steps[-1][0] <= got.ended_at, "the steps arrived in one read"
    assert got.exited_at - got.ended_at < 5.0  # it stops polling once the job has ended
    (mid,) = running
    m = mid["metrics"]
    assert m["elapsed_s"] > 0 and m["seconds_left"] > 0, m  # not "0s left"
    # the time left is torchtune's own pace (its bar's clock, start-up excluded), else the
    # job's average pace since it started: never more than the average's
    pace = m["elapsed_s"] / m["step"]
    slack = 0.05 * (total - m["step"]) / m["step"] + 0.1  # elapsed_s is rounded to 0.1 s
    assert m["seconds_left"] <= pace * (total - m["step"]) + slack, m
    st = status(workdir, e2e_env, *sets)
    assert st["phase"] == "Succeeded" and "seconds_left" not in st["metrics"], st["metrics"]


def test_replace_stops_the_running_job_and_submits_the_new_one(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, ray_sets: tuple[str, ...]
        ) -> None:
    first = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *ray_sets, *LONG)
    assert first.returncode == 0, first.stdout + first.stderr
    (old,) = owned_ids(ray_head.address)
    wait_for(lambda: jobs(ray_head.address)[old]["status"] == "RUNNING", 120, "RUNNING")

    changed = (*ray_sets, *LONG, "--set", "training.learning_rate=2.0e-2")
    plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", *changed)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "must be replaced" in plan.stdout and "learning rate 0.01 -> 0.02" in plan.stdout
    assert f"{old} is stopped first" in plan.stdout
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *changed)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    (new,) = owned_ids(ray_head.address)  # the old job was stopped and deleted
    assert new != old and old not in jobs(ray_head.address)
    assert status(workdir, e2e_env, *changed)["platform"]["submission_id"] == new

    gone = ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *changed)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert owned_ids(ray_head.address) == set()
    assert status(workdir, e2e_env, *changed)["phase"] == "Unknown"


def test_renamed_spec_cleans_up_its_old_job_and_never_touches_foreign_jobs(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, ray_sets: tuple[str, ...]
        ) -> None:
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(ray_head.address)
    foreign = client.submit_job(entrypoint="echo not-ftspec", metadata={"team": "other"})
    first = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *ray_sets)
    assert first.returncode == 0, first.stdout + first.stderr
    (old,) = owned_ids(ray_head.address)

    renamed = (*ray_sets, "--set", "metadata.id=tiny-renamed")
    plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", *renamed)
    assert plan.returncode == 2, plan.stdout
    assert "ray.job.tiny-renamed will be created" in plan.stdout
    assert "ray.job.tiny-local will be destroyed" in plan.stdout
    assert "no longer produces it" in plan.stdout
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *renamed)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    live = jobs(ray_head.address)
    assert old not in live and foreign in live
    (new,) = owned_ids(ray_head.address)
    assert live[new]["metadata"]["ftspec.dev/spec-id"] == "tiny-renamed"
    ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *renamed)
    assert foreign in jobs(ray_head.address)


def test_job_stopped_outside_ftspec_is_drift(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, ray_sets: tuple[str, ...]
        ) -> None:
    from ray.job_submission import JobSubmissionClient

    sets = (*ray_sets, *LONG)
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *sets)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    (sid,) = owned_ids(ray_head.address)
    JobSubmissionClient(ray_head.address).stop_job(sid)
    wait_for(lambda: jobs(ray_head.address)[sid]["status"] == "STOPPED", 120, "STOPPED")

    st = status(workdir, e2e_env, *sets)
    assert st["phase"] == "Failed" and "STOPPED" in st["message"], st
    plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", "--json", *sets)
    assert plan.returncode == 2, plan.stdout
    (change,) = json.loads(plan.stdout)["changes"]
    assert change["action"] == "replace" and change["drift"] is True
    assert "stopped outside ftspec" in change["reason"]
    again = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *sets)
    assert again.returncode == 0, again.stdout + again.stderr
    resubmitted = jobs(ray_head.address)[sid]
    assert resubmitted["status"] in ("PENDING", "RUNNING"), (
        resubmitted, JobSubmissionClient(ray_head.address).get_job_logs(sid)[-3000:])


def test_unreachable_head_is_a_clear_error_and_nothing_is_lost(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, ray_sets: tuple[str, ...]
        ) -> None:
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *ray_sets)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    before = owned_ids(ray_head.address)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"  # nothing listens there
    for command in (("plan",), ("apply", "--auto-approve"), ("status",),
                    ("destroy", "--auto-approve")):
        done = ftspec(workdir, e2e_env, *command, str(SPEC), *ray_sets,
                      "--set", f"deploy.ray.address={dead}")
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert f"cannot reach the Ray Jobs API at {dead}" in done.stderr, done.stderr
        assert "hint:" in done.stderr
    assert owned_ids(ray_head.address) == before  # nothing lost, nothing duplicated

    pairs = iter(ray_sets)
    no_address = [x for flag, value in zip(pairs, pairs)
                  if not value.startswith("deploy.ray.address=") for x in (flag, value)]
    missing = ftspec(workdir, {**e2e_env, "RAY_ADDRESS": ""}, "plan", str(SPEC), *no_address)
    assert missing.returncode == 1 and "RAY_ADDRESS" in missing.stderr, missing.stderr
    from_env = ftspec(workdir, {**e2e_env, "RAY_ADDRESS": ray_head.address}, "plan",
                      str(SPEC), "--detailed-exitcode", *no_address)
    # The head is found through RAY_ADDRESS and the job applied above is read: where the
    # address came from does not change what runs, so there is nothing to do.
    assert from_env.returncode == 0, from_env.stdout + from_env.stderr
    assert "No changes" in from_env.stdout, from_env.stdout
    assert owned_ids(ray_head.address) == before


def test_failed_job_says_why_and_list_shows_the_clusters_jobs(
        workdir: Path, e2e_env: dict[str, str], ray_head: Any, ray_sets: tuple[str, ...]
        ) -> None:
    import shutil

    broken = (workdir / "broken").resolve()
    shutil.copytree(workdir / ".ftspec/tiny/llama2/model", broken)
    (broken / "tokenizer.model").write_bytes(b"not a sentencepiece model\n")
    sets = (*ray_sets, "--set", f"model.tokenizer.uri=file://{broken}/tokenizer.model")
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait", *sets)
    assert applied.returncode == 1, applied.stdout + applied.stderr
    st = status(workdir, e2e_env, *sets)
    assert st["phase"] == "Failed"
    why = st["reason"]
    assert why["validity"] == "failed"
    assert "exception" in why, (why, st["platform"].get("log_tail"))
    assert why["exception"]["type"] == "RuntimeError", why
    assert f"{broken}/tokenizer.model" in why["exception"]["message"]
    assert "Job entrypoint command failed with exit code 1" in why["platform"], why
    human = ftspec(workdir, e2e_env, "status", str(SPEC), *sets)
    assert "reason (failed): RuntimeError: " in human.stdout, human.stdout
    produced = json.loads(ftspec(workdir, e2e_env, "output", str(SPEC), "--json", *sets).stdout)
    assert produced["measured"] == {"validity": "failed"}  # no step ran: nothing to measure

    rows = json.loads(ftspec(workdir, e2e_env, "list", str(SPEC), "--json", *sets).stdout)
    ray = [r for r in rows if r["target"] == "ray"]
    assert [(r["name"], r["phase"], r["validity"]) for r in ray] == [
        ("tiny-local", "Failed", "failed")], rows
    assert ray[0]["job"] == st["platform"]["submission_id"]
    assert ray[0]["where"] == f"ray {ray_head.address}"
