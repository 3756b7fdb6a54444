"""Change is decided by what would run: no hash of the spec with its defaults, no header,
no install path takes part, so a new ftspec that compiles the same run plans no change."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest
from ftspec.compiler.dispatch import compile_job
from ftspec.reconciler.applied import (
    AppliedRecord,
    decode,
    encode,
    record_of,
    upgrade_note,
)
from ftspec.reconciler.kubernetes.planner import ObjectInput, decide
from ftspec.reconciler.local.compare import current_names, program
from ftspec.reconciler.model import Action
from ftspec.reconciler.ray.compare import run_changes
from ftspec.targets import get_target
from ftspec.targets.ray import submission
from helpers.examples import EXAMPLES
from helpers.jobs import load_example, make_job

TARGETS = ("torchtune", "accelerate", "kubeflow", "kuberay", "ray")


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_artifacts_do_not_move_with_a_new_default(example: Path) -> None:
    """A new ftspec that adds a defaulted field moves the spec hash and the defaults the Job
    records; no artifact of any target may change with them (the goldens stay as they are)."""
    job = load_example(example)
    moved = replace(job, spec_hash="0123456789abcdef",
                    defaults={**job.defaults, "data.a_new_field": False})
    compared = 0
    for target in TARGETS:
        if any(d.is_error for d in get_target(target).check(job)):
            continue  # a target this example is not for
        before = [(a.path, a.content) for a in compile_job(job, target)]
        after = [(a.path, a.content) for a in compile_job(moved, target)]
        assert before == after, target
        assert not any(job.spec_hash in text for _, text in before), target
        compared += 1
    assert compared >= 2


def test_written_digest_ignores_defaults_and_spec_hash_does_not() -> None:
    plain = make_job()
    explicit_default = make_job(training={"seed": plain.spec.training.seed})
    assert plain.spec_hash == explicit_default.spec_hash
    assert plain.written != explicit_default.written  # the user wrote one more key
    assert "training.seed" in plain.defaults and "training.seed" not in explicit_default.defaults


def test_program_is_compared_by_what_it_runs() -> None:
    a = ["/venv-a/bin/python3.11", "-m", "torchtune._cli.tune", "run", "r", "--config", "c"]
    b = ["/venv-b/bin/tune", "run", "r", "--config", "c"]
    assert program(a) == program(b) == ["tune", "run", "r", "--config", "c"]
    assert program(["/usr/bin/python3", "x.py"]) == program(["/other/python", "x.py"])
    assert program(b) != program(["/venv-b/bin/tune", "run", "r", "--config", "d"])



def test_a_moved_ftspec_entrypoint_is_the_same_local_program() -> None:
    old = ["/venv-a/bin/accelerate", "launch", "--config_file", "a.yaml",
           "-m", "ftspec.targets.entrypoints.hf_sft", "--config", "sft.yaml"]
    new = ["/venv-b/bin/accelerate", "launch", "--config_file", "a.yaml",
           "-m", "ftspec.runtime.hf_sft", "--config", "sft.yaml"]
    assert program(old) == program(new)
    assert program(new) != program([*new[:5], "trl.scripts.sft", *new[6:]])
    assert current_names("-m ftspec.targets.entrypoints.ray_nodes") == \
        "-m ftspec.runtime.ray_nodes"

def _legacy(body: dict[str, object], old_hash: str) -> dict[str, object]:
    """``body`` as an older ftspec submitted it: header with a hash, another id."""
    out = json.loads(json.dumps(body))
    sid, old_sid = str(body["submission_id"]), "tiny-lora-0ld0ld0ld0ld"
    env = out["runtime_env"]["env_vars"]
    files = json.loads(base64.b64decode(env["FTSPEC_FILES"]))
    files = {name: text.replace("from spec tiny-lora; do not edit.",
                                f"from spec tiny-lora (hash {old_hash}); do not edit.")
             for name, text in files.items()}
    env["FTSPEC_FILES"] = base64.b64encode(json.dumps(files).encode()).decode()
    env["FTSPEC_RUN_DIR"] = env["FTSPEC_RUN_DIR"].replace(sid, old_sid)
    out["entrypoint"] = str(out["entrypoint"]).replace(sid, old_sid)
    out["submission_id"] = old_sid
    return out


def test_ray_job_of_an_older_ftspec_runs_the_same() -> None:
    body = submission(make_job(deploy={"target": "ray"}))
    old = _legacy(body, "f63372041240fd2e")
    assert "(hash f63372041240fd2e)" in base64.b64decode(
        old["runtime_env"]["env_vars"]["FTSPEC_FILES"]).decode()  # type: ignore[index]
    assert run_changes(old, body) == []
    changed = submission(make_job(deploy={"target": "ray"}, training={"learning_rate": 0.5}))
    paths = [f.path for f in run_changes(old, changed)]
    assert paths and all(p.startswith(("files[", "entrypoint", "env[")) for p in paths)


def test_rayjob_of_an_older_ftspec_plans_no_change() -> None:
    from ftspec.targets.kuberay import rayjob

    job = make_job(deploy={"target": "kuberay"})
    desired = rayjob(job)
    sid = desired["spec"]["jobId"]
    live = json.loads(json.dumps(desired).replace(sid, "tiny-lora-0ld0ld0ld0ld"))
    live["metadata"].setdefault("annotations", {})["ftspec.dev/spec-hash"] = "f63372041240fd2e"
    live["spec"]["metadata"]["ftspec.dev/spec-hash"] = "f63372041240fd2e"
    inp = ObjectInput("kuberay", job.spec_id, "x.yaml", desired, live)
    assert decide(inp).action is Action.NOOP
    changed = rayjob(make_job(deploy={"target": "kuberay"}, training={"learning_rate": 0.5}))
    assert decide(replace(inp, desired=changed)).action is Action.REPLACE


def test_record_round_trip_and_untrusted_input() -> None:
    job = make_job()
    record = record_of(job)
    text = encode(record)
    assert decode(text) == record
    assert len(text) < 4096
    for bad in ("", "[]", "{", json.dumps({"ftspec": 1}), "x" * 100_000,
                json.dumps({"ftspec": "1", "written": "w", "defaults": "not base64!"})):
        assert decode(bad) is None


def test_upgrade_note_names_the_moved_default() -> None:
    job = make_job()
    now = record_of(job)
    seed = job.defaults["training.seed"]
    old = AppliedRecord("0.0.9", now.written, {**now.defaults, "training.seed": seed + 1},
                        now.summary)
    note = upgrade_note(old, job)
    assert note is not None
    assert f"0.0.9 -> {now.ftspec}" in note
    assert f"training.seed {seed + 1} -> {seed}" in note
    assert f"training.seed: {seed + 1}" in note  # what to pin
    # the user changed the spec: the change is theirs, no upgrade note
    assert upgrade_note(replace(old, written="other"), job) is None
    assert upgrade_note(None, job) is None
    legacy = upgrade_note(None, job, legacy=True)
    assert legacy is not None and "kept no record of the spec as written" in legacy
