"""Commands typed in a subfolder of a project (or with ``-C DIR``) work on the project's
runs: the root is the nearest folder above holding ``.ftspec/`` (issue 36, item 3). A real
run of the quickstart spec on the local backend, started from the root; in a private PID
namespace, since destroy signals it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.pidns import private_pid_namespace
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")


def ftspec(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([FTSPEC, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done


@private_pid_namespace
def test_a_subfolder_sees_the_projects_runs(workdir: Path, e2e_env: dict[str, str]) -> None:
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "project root" not in applied.stderr  # the working directory is the root
    sub = workdir / "notes" / "day2"
    sub.mkdir(parents=True)
    spec = f"../../{SPEC}"
    root_line = f"project root: {workdir.resolve()} (found above the working directory)"
    try:
        status = ftspec(sub, e2e_env, "status", spec, "--json")
        assert status.returncode == 0, status.stderr
        (st,) = json.loads(status.stdout)  # the root line is on stderr, never in --json
        assert st["phase"] in ("Pending", "Running", "Succeeded"), st
        assert root_line in status.stderr
        listed = ftspec(sub, e2e_env, "list", "--json")
        assert [r["name"] for r in json.loads(listed.stdout)] == ["tiny-local"]
        plan = ftspec(sub, e2e_env, "plan", spec, "--detailed-exitcode")
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert "No changes." in plan.stdout and root_line in plan.stderr
        # -C: as if started in that folder, whose root is then found above it too
        elsewhere = workdir.parent
        chdir = ftspec(elsewhere, e2e_env, "-C", str(sub), "plan", spec,
                       "--detailed-exitcode")
        assert chdir.returncode == 0 and "No changes." in chdir.stdout, chdir.stderr
        listed = ftspec(elsewhere, e2e_env, "--chdir", workdir.name, "list", "--json")
        assert [r["name"] for r in json.loads(listed.stdout)] == ["tiny-local"]
        assert f"project root: {workdir.resolve()} (-C)" in listed.stderr
    finally:
        destroyed = ftspec(sub, e2e_env, "destroy", spec, "--auto-approve")
    assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
    assert "1 destroyed" in destroyed.stdout
    assert not list((workdir / ".ftspec" / "local").glob("*.json"))
    assert not (sub / ".ftspec").exists()
