"""A job is known by its metadata.name, not its file's name (issue 21): renaming a spec file
(``git mv``) plans "No changes" with a move line and apply trains nothing new; a run the
previous release recorded under its file's name (a file whose stem is not its
metadata.name) is found and moved, also when that file was renamed since. Real runs on the
local backend; the previous release is ``helpers.previous``'s."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.pidns import private_pid_namespace
from helpers.previous import PreviousUnavailable, previous_ftspec
from helpers.tinyspec import SPEC, ray_sets

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
NO_CHANGES = "No changes. Your live objects match the spec."


def run(command: str, workdir: Path, env: dict[str, str], *args: str
        ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([command, *args], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    keep = os.environ.get("FTSPEC_TEST_TRANSCRIPT")  # a file to append the transcript to
    if keep and args[0] == "plan":
        with open(keep, "a", encoding="utf-8") as out:
            out.write(f"$ ftspec {' '.join(a for a in args if not a.startswith('file:'))}"
                      f"\n{done.stdout}{done.stderr}\n")
    return done


def records(workdir: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in (workdir / ".ftspec/local").glob("*.json")}


def git(workdir: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=workdir,
                   check=True, capture_output=True)


def one_line(text: str) -> str:
    return " ".join(text.split())


@private_pid_namespace
def test_a_renamed_spec_file_plans_no_changes_and_applies_no_new_run(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    applied = run(FTSPEC, workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    (before,) = records(workdir).values()
    git(workdir, "init", "-q")
    git(workdir, "add", str(SPEC))
    git(workdir, "commit", "-qm", "spec")
    git(workdir, "mv", str(SPEC), "examples/renamed.yaml")

    plan = run(FTSPEC, workdir, e2e_env, "plan", "examples/renamed.yaml",
               "--detailed-exitcode")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert NO_CHANGES in plan.stdout
    assert ("> local.run.tiny-local # spec file renamed from examples/tiny-local.yaml"
            in one_line(plan.stdout)), plan.stdout

    again = run(FTSPEC, workdir, e2e_env, "apply", "examples/renamed.yaml", "--auto-approve")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Apply complete: nothing changed." in again.stdout
    (after,) = records(workdir).values()
    same = ("supervisor_pid", "supervisor_create_time", "started_at", "run_dir", "argv")
    assert {k: after[k] for k in same} == {k: before[k] for k in same}  # no new run
    assert after["spec_file"] == "examples/renamed.yaml"
    quiet = run(FTSPEC, workdir, e2e_env, "plan", "examples/renamed.yaml",
                "--detailed-exitcode")
    assert quiet.returncode == 0 and NO_CHANGES in quiet.stdout
    assert "Moved" not in quiet.stdout  # recorded under the new file: nothing left to say
    run(FTSPEC, workdir, e2e_env, "destroy", "examples/renamed.yaml", "--auto-approve")


@pytest.fixture(scope="module")
def previous() -> str:
    try:
        return str(previous_ftspec())
    except PreviousUnavailable as exc:
        pytest.fail(f"the previous release of ftspec could not be installed: {exc}",
                    pytrace=False)


@private_pid_namespace
def test_a_run_of_the_previous_release_under_its_file_name_is_moved_not_retrained(
        workdir: Path, e2e_env: dict[str, str], previous: str) -> None:
    """The previous release knew ``examples/my-run.yaml`` (metadata.name tiny-local) as
    ``my-run``; this one knows it as ``tiny-local``: plan says No changes and the id's move,
    apply re-records the run under the new id (its folder and process untouched)."""
    spec = workdir / "examples/my-run.yaml"
    shutil.move(workdir / SPEC, spec)
    old = run(previous, workdir, e2e_env, "apply", "examples/my-run.yaml", "--auto-approve",
              "--wait")
    assert old.returncode == 0, old.stdout + old.stderr
    assert list(records(workdir)) == ["my-run"]
    before = records(workdir)["my-run"]

    plan = run(FTSPEC, workdir, e2e_env, "plan", "examples/my-run.yaml",
               "--detailed-exitcode")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert NO_CHANGES in plan.stdout
    assert ("> local.run.my-run has moved to local.run.tiny-local # id changed from "
            "'my-run' to 'tiny-local' by the ftspec upgrade" in one_line(plan.stdout))
    seen = run(FTSPEC, workdir, e2e_env, "status", "examples/my-run.yaml", "--json")
    assert json.loads(seen.stdout)[0]["phase"] == "Succeeded", seen.stdout  # before the move

    applied = run(FTSPEC, workdir, e2e_env, "apply", "examples/my-run.yaml", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert list(records(workdir)) == ["tiny-local"]
    after = records(workdir)["tiny-local"]
    assert after["run_id"] == "my-run" and after["run_dir"] == before["run_dir"]
    assert after["supervisor_pid"] == before["supervisor_pid"]
    assert after["started_at"] == before["started_at"]
    quiet = run(FTSPEC, workdir, e2e_env, "plan", "examples/my-run.yaml",
                "--detailed-exitcode")
    assert quiet.returncode == 0 and NO_CHANGES in quiet.stdout and "Moved" not in quiet.stdout
    status = run(FTSPEC, workdir, e2e_env, "status", "examples/my-run.yaml", "--json")
    assert json.loads(status.stdout)[0]["phase"] == "Succeeded", status.stdout
    run(FTSPEC, workdir, e2e_env, "destroy", "examples/my-run.yaml", "--auto-approve")


@private_pid_namespace
def test_a_file_renamed_after_the_previous_release_applied_it_is_a_move(
        workdir: Path, e2e_env: dict[str, str], previous: str) -> None:
    spec = workdir / "examples/my-run.yaml"
    shutil.move(workdir / SPEC, spec)
    old = run(previous, workdir, e2e_env, "apply", "examples/my-run.yaml", "--auto-approve",
              "--wait")
    assert old.returncode == 0, old.stdout + old.stderr
    shutil.move(spec, workdir / "examples/other.yaml")
    plan = run(FTSPEC, workdir, e2e_env, "plan", "examples/other.yaml", "--detailed-exitcode")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert NO_CHANGES in plan.stdout
    assert ("> local.run.my-run has moved to local.run.tiny-local # renamed from "
            "examples/my-run.yaml" in one_line(plan.stdout)), plan.stdout
    applied = run(FTSPEC, workdir, e2e_env, "apply", "examples/other.yaml", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert list(records(workdir)) == ["tiny-local"]
    run(FTSPEC, workdir, e2e_env, "destroy", "examples/other.yaml", "--auto-approve")


@private_pid_namespace
def test_two_spec_files_with_one_metadata_name_are_refused_at_the_second(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    shutil.copy(workdir / SPEC, workdir / "examples/copy.yaml")
    both = run(FTSPEC, workdir, e2e_env, "plan", str(SPEC), "examples/copy.yaml")
    assert both.returncode == 1
    line = next(x for x in both.stderr.splitlines() + both.stdout.splitlines()
                if "duplicate identity" in x)
    assert line.startswith("examples/copy.yaml:19:9: error: metadata.name: duplicate identity: "
                           "examples/tiny-local.yaml also declares the job 'tiny-local'"), line
    # one at a time: the second finds the first's run, applied from a file that still
    # declares the same job
    applied = run(FTSPEC, workdir, e2e_env, "apply", str(SPEC), "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    try:
        second = run(FTSPEC, workdir, e2e_env, "plan", "examples/copy.yaml")
        assert second.returncode == 1
        assert "examples/copy.yaml:19:9: error: metadata.name: duplicate identity" in \
            second.stdout + second.stderr
    finally:
        run(FTSPEC, workdir, e2e_env, "destroy", str(SPEC), "--auto-approve")


@pytest.mark.ray
def test_a_ray_job_of_the_previous_release_under_its_file_name_plans_a_move(
        workdir: Path, e2e_env: dict[str, str], previous: str, ray_head: Any) -> None:
    """Ray jobs cannot be relabelled: the job the previous release submitted as ``my-run``
    is found and kept (No changes, the move said), on every plan until it is replaced."""
    sets = ray_sets(workdir, ray_head.address)
    shutil.move(workdir / SPEC, workdir / "examples/my-run.yaml")
    for _ in range(3):  # a just-started head may answer after the client's timeout
        old = run(previous, workdir, e2e_env, "apply", "examples/my-run.yaml",
                  "--auto-approve", *sets)
        if "cannot reach the Ray Jobs API" not in old.stderr + old.stdout:
            break
    assert old.returncode == 0, old.stdout + old.stderr
    try:
        plan = run(FTSPEC, workdir, e2e_env, "plan", "examples/my-run.yaml",
                   "--detailed-exitcode", *sets)
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert NO_CHANGES in plan.stdout
        assert ("> ray.job.my-run has moved to ray.job.tiny-local # id changed from 'my-run' "
                "to 'tiny-local' by the ftspec upgrade" in one_line(plan.stdout)), plan.stdout
        status = run(FTSPEC, workdir, e2e_env, "status", "examples/my-run.yaml", "--json",
                     *sets)
        phase = json.loads(status.stdout)[0]["phase"]
        if phase not in ("Pending", "Running", "Succeeded"):
            logs = run(FTSPEC, workdir, e2e_env, "logs", "examples/my-run.yaml", *sets)
            raise AssertionError(f"{phase}: {status.stdout}\n{logs.stdout[-3000:]}")
    finally:
        gone = run(FTSPEC, workdir, e2e_env, "destroy", "examples/my-run.yaml",
                   "--auto-approve", *sets)
        assert gone.returncode == 0, gone.stdout + gone.stderr
        assert "1 destroyed" in gone.stdout


@private_pid_namespace
def test_a_changed_metadata_name_is_a_new_job_not_a_move(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    """tiny-local.yaml named tiny-local, applied by this ftspec (its record names the job),
    then renamed to ``other``: the old id is also the file's stem, yet this is the user's
    rename, not the upgrade's: a create and the old run's delete (same file, another id)."""
    applied = run(FTSPEC, workdir, e2e_env, "apply", str(SPEC), "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert records(workdir)["tiny-local"]["name"] == "tiny-local"
    try:
        plan = run(FTSPEC, workdir, e2e_env, "plan", str(SPEC), "--set", "metadata.name=other",
                   "--json")
        actions = {c["address"]: c["action"] for c in json.loads(plan.stdout)["changes"]}
        assert actions == {"local.run.other": "create", "local.run.tiny-local": "delete"}
        assert not any(c.get("moved_from") for c in json.loads(plan.stdout)["changes"])
    finally:
        run(FTSPEC, workdir, e2e_env, "destroy", str(SPEC), "--auto-approve")
