"""A saved plan cannot make ftspec run what no spec produces (issue 34, item 1; local).

Each test is an attack from the issue, then the refusal. On main before the fix: an edited
``argv`` with its checksum recomputed (or deleted) ran (``id`` wrote its output), an ``env``
with ``BASH_ENV`` ran, a plan saved as a spec file was applied by ``ftspec apply FILE``
without a prompt, the same CREATE twice started two runs (``destroy`` left one), and a
changed spec did not matter. Every test runs in a private PID (and mount) namespace: a
regression here starts processes.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler.local import procs
from helpers.pidns import private_pid_namespace

from security.localstate import RUN_DIR, SPEC, project, run_cli

PLAN = "tfplan"


def _planned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, Any]]:
    """A project with the quickstart spec, a plan of it saved to ``tfplan``, and its JSON."""
    root = project(tmp_path / "p")
    monkeypatch.chdir(root)
    code, out = run_cli(["plan", SPEC, "--out", PLAN])
    assert code == 0, out
    return root, json.loads((root / PLAN).read_text())


def _forged(root: Path, doc: dict[str, Any], name: str, *, checksum: bool = True) -> str:
    """``doc`` written as a plan with its checksum recomputed the way anyone can."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    if checksum:
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        body["checksum"] = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    (root / name).write_text(json.dumps(body))
    return name


def _nothing_started(root: Path) -> None:
    time.sleep(1.0)  # what a started run would have had time to do
    assert not (root / ".ftspec" / "local").exists() or \
        not list((root / ".ftspec" / "local").glob("*.json"))
    assert procs.find_supervisors(root / RUN_DIR) == []


@private_pid_namespace
def test_edited_argv_with_a_recomputed_checksum_does_not_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, doc = _planned(tmp_path, monkeypatch)
    doc["changes"][0]["after"]["argv"] = ["sh", "-c", f"id > {root / 'pwned'}"]
    code, out = run_cli(["apply", "--plan", _forged(root, doc, "argv.plan")])
    assert code == 1
    assert ("Saved plan does not match what its specs compile to now: changes[0] "
            "local.run.tiny-local (create): after.argv[0] differs; nothing was changed") in out
    _nothing_started(root)
    assert not (root / "pwned").exists()


@private_pid_namespace
def test_env_with_bash_env_does_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    root, doc = _planned(tmp_path, monkeypatch)
    (root / "evil.sh").write_text(f"id > {root / 'pwned'}\n")
    doc["changes"][0]["after"]["env"]["BASH_ENV"] = str(root / "evil.sh")
    code, out = run_cli(["apply", "--plan", _forged(root, doc, "env.plan")])
    assert code == 1 and "after.env.BASH_ENV differs" in out, out
    _nothing_started(root)
    assert not (root / "pwned").exists()


@private_pid_namespace
def test_a_plan_without_its_checksum_is_refused(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root, doc = _planned(tmp_path, monkeypatch)
    doc["changes"][0]["after"]["argv"] = ["sh", "-c", f"id > {root / 'pwned'}"]
    code, out = run_cli(["apply", "--plan", _forged(root, doc, "bare.plan", checksum=False)])
    assert code == 1 and "bare.plan: the document: missing key 'checksum'" in out, out
    _nothing_started(root)


@private_pid_namespace
def test_a_plan_saved_as_a_spec_file_is_never_taken_for_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _doc = _planned(tmp_path, monkeypatch)
    (root / "job.yaml").write_text((root / PLAN).read_text())
    for args in (["apply", "job.yaml"], ["apply", "job.yaml", "--auto-approve"],
                 ["destroy", "job.yaml", "--auto-approve"]):
        code, out = run_cli(args)
        assert code == 1, out
        assert "job.yaml holds a saved ftspec plan, not a spec: nothing was applied" in out
        assert "`ftspec apply --plan job.yaml`" in out
    code, out = run_cli(["validate", "job.yaml"])
    assert code == 1
    _nothing_started(root)


@private_pid_namespace
def test_the_same_create_twice_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    root, doc = _planned(tmp_path, monkeypatch)
    doc["changes"].append(doc["changes"][0])
    code, out = run_cli(["apply", "--plan", _forged(root, doc, "twice.plan")])
    assert code == 1
    assert ("twice.plan: changes[1].address: 'local.run.tiny-local' is also the address of "
            "changes[0]; a plan changes each object once") in out, out
    _nothing_started(root)


@private_pid_namespace
def test_a_spec_changed_since_the_plan_makes_it_stale(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _doc = _planned(tmp_path, monkeypatch)
    spec = root / SPEC
    spec.write_text(spec.read_text().replace("  seed: 42", "  seed: 43"))
    code, out = run_cli(["apply", "--plan", PLAN])
    assert code == 1
    assert (f"Saved plan is stale: spec {SPEC} changed since the plan was made; nothing was "
            "changed") in out, out
    _nothing_started(root)


@private_pid_namespace
def test_a_reviewed_plan_applies_without_a_prompt_and_only_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Terraform's semantics: the plan was reviewed when saved (no prompt, standard input is
    no terminal here); applied again, it is stale."""
    root, _doc = _planned(tmp_path, monkeypatch)
    code, out = run_cli(["apply", "--plan", PLAN])
    assert code == 0, out
    assert "Apply complete: 1 run started" in out
    assert len(procs.find_supervisors(root / RUN_DIR)) == 1
    code, out = run_cli(["apply", "--plan", PLAN])
    assert code == 1
    assert ("Saved plan is stale: local.run.tiny-local was created since the plan was made"
            in out), out
    assert len(procs.find_supervisors(root / RUN_DIR)) == 1
    code, out = run_cli(["destroy", SPEC, "--auto-approve"])
    assert code == 0, out
    assert procs.find_supervisors(root / RUN_DIR) == []
