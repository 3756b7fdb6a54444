"""Saved plans through the real CLI on the local backend: any file name, `show`, `apply
PLAN --wait` following the plan's job to its end, a stale plan refused with what changed,
and an apply that meets another apply's lock naming it (not "stale plan")."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from ftspec.reconciler.local.state import StateStore
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")


def ftspec(workdir: Path, env: dict[str, str], *args: str, timeout: float = 600
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FTSPEC, *args], check=False, cwd=workdir, env=env,
                          capture_output=True,
                          text=True, timeout=timeout)


def test_saved_plan_any_name_show_apply_wait_stale(workdir: Path, e2e_env: dict[str, str]
                                                   ) -> None:
    made = ftspec(workdir, e2e_env, "plan", str(SPEC), "--out", "tfplan")
    assert made.returncode == 0, made.stdout + made.stderr
    assert "ftspec apply --plan tfplan" in made.stdout
    mode = stat.S_IMODE((workdir / "tfplan").stat().st_mode)
    assert mode == 0o600, oct(mode)

    shown = ftspec(workdir, e2e_env, "show", "tfplan")
    assert shown.returncode == 0, shown.stderr
    assert "# local.run.tiny-local will be created" in shown.stdout
    assert "Plan: 1 to add, 0 to change, 0 to destroy." in shown.stdout
    assert "ftspec apply --plan tfplan" in shown.stdout
    as_json = json.loads(ftspec(workdir, e2e_env, "show", "tfplan", "--json").stdout)
    assert as_json["kind"] == "ftspec-plan" and as_json["changes"][0]["action"] == "create"

    applied = ftspec(workdir, e2e_env, "apply", "--plan", "tfplan", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "Apply complete: 1 run started." in applied.stdout and "Succeeded" in \
        applied.stdout, applied.stdout
    assert applied.stdout.rstrip().endswith("Run succeeded."), applied.stdout
    assert "step 16/16" in applied.stderr

    # a no-op apply --wait shows the finished run; it does not replay its log
    noop = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait")
    assert noop.returncode == 0, noop.stdout + noop.stderr
    assert "loading the model" not in noop.stderr and "step 1/16" not in noop.stderr, \
        noop.stderr
    assert "Run succeeded. (already finished: this apply started nothing)" in noop.stdout

    # the same plan again: the run it planned to create exists now
    again = ftspec(workdir, e2e_env, "apply", "--plan", "tfplan")
    assert again.returncode == 1
    assert "Saved plan is stale: local.run.tiny-local was created since the plan was made" \
        in again.stderr, again.stderr
    assert again.stdout == "", again.stdout  # refused before any of the plan is printed
    assert len(again.stderr.strip().splitlines()) == 2, again.stderr  # the error, its hint
    assert "Traceback" not in again.stderr

    # a hand-edited plan is refused before anything runs
    doc = json.loads((workdir / "tfplan").read_text())
    doc["changes"][0]["after"]["argv"] = ["sh", "-c", "echo edited"]
    (workdir / "edited.plan").write_text(json.dumps(doc, indent=2))
    edited = ftspec(workdir, e2e_env, "apply", "--plan", "edited.plan")
    assert edited.returncode == 1
    assert "the plan was changed after it was saved" in edited.stderr, edited.stderr
    corrupt = workdir / "corrupt.plan"
    corrupt.write_text('{"kind": "ftspec-plan", "format_version": 2, "changes": [')
    broken = ftspec(workdir, e2e_env, "show", str(corrupt))
    assert broken.returncode == 1 and "cannot read saved plan" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_plan_out_writes_no_link_target(workdir: Path, e2e_env: dict[str, str]) -> None:
    victim = workdir / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, workdir / "link.plan")
    made = ftspec(workdir, e2e_env, "plan", str(SPEC), "--out", "link.plan")
    assert made.returncode == 0, made.stderr
    assert victim.read_text() == "keep me\n"
    assert not (workdir / "link.plan").is_symlink()
    assert ftspec(workdir, e2e_env, "show", "link.plan").returncode == 0


def test_concurrent_apply_names_the_lock_holder(workdir: Path, e2e_env: dict[str, str]
                                                ) -> None:
    """Another apply holds the lock while this one plans and waits; it changes the state
    meanwhile. This apply says who held the lock, since when, and that nothing changed."""
    first = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait")
    assert first.returncode == 0, first.stdout + first.stderr
    store = StateStore(workdir)
    taken, release = threading.Event(), threading.Event()

    def other_apply() -> None:
        with store.lock():
            taken.set()
            release.wait(60)
            store.remove("tiny-local")  # what a concurrent destroy would record

    holder = threading.Thread(target=other_apply)
    holder.start()
    try:
        assert taken.wait(10)
        second = subprocess.Popen(
            [FTSPEC, "apply", str(SPEC), "--auto-approve", "--set", "training.seed=7"],
            cwd=workdir, env=e2e_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        err_lines: list[str] = []
        assert second.stderr is not None
        for line in second.stderr:
            err_lines.append(line)
            if "waiting for the local state lock" in line:
                break
        release.set()
        out, rest = second.communicate(timeout=120)
    finally:
        release.set()
        holder.join()
    err = "".join(err_lines) + rest
    assert second.returncode == 1, out + err
    assert f"waiting for the local state lock, held by pid {os.getpid()}" in err, err
    assert "since " in err and " s ago" in err
    assert "Saved plan is stale" not in err
    assert "the live state changed between this apply's plan and its changes" in err
    assert ("the run of local.run.tiny-local was removed since the plan was made, by another "
            f"ftspec that held the state lock meanwhile: pid {os.getpid()}") in err, err
    assert "Nothing was changed" in err
    assert not (workdir / ".ftspec/local/tiny-local.json").exists()
