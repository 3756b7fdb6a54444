"""Fuzz the CLI's entry point with mutated examples: no traceback, no echo, no injection.

A small, fixed-seed hypothesis budget keeps CI fast; ``bench/fuzz.py`` runs thousands of
mutants with the same engine (``security.fuzzing``) and prints the outcome classes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.pidns import private_pid_namespace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from security.fuzzing import BAD_CLASSES, EXAMPLES, SECRET, fresh_root, mutate, run_mutant

TARGETS = ["torchtune", "accelerate", "kubeflow", "kuberay", "ray"]


@pytest.fixture(autouse=True)
def _private_state(tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.mark.slow
@settings(max_examples=80, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(example=st.sampled_from(EXAMPLES), seed=st.integers(0, 2**32 - 1),
       count=st.integers(1, 4), target=st.sampled_from(TARGETS))
def test_mutated_examples_never_crash_echo_or_inject(
        tmp_path_factory: pytest.TempPathFactory, example: Path, seed: int, count: int,
        target: str) -> None:
    root = fresh_root(tmp_path_factory.getbasetemp())
    try:
        text = mutate(example.read_text(), seed, root / "canary", count)
        outcome = run_mutant(text, root, [target])
        assert outcome.kind not in BAD_CLASSES, (outcome.kind, outcome.detail, text)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_engine_detects_what_it_looks_for(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzz test can fail: crashes, echoes and canaries are each classed as such."""
    import ftspec.spec.validate as validate_module

    example = EXAMPLES[0].read_text()
    root = fresh_root(tmp_path)
    assert run_mutant(example, root, ["torchtune"]).kind in ("ok", "refused")
    (root / "canary" / "planted").touch()
    assert run_mutant(example, root, ["torchtune"]).kind == "injection"

    def leak(doc: object, *args: object, **kwargs: object) -> object:
        raise RuntimeError("bug")

    monkeypatch.setattr(validate_module, "validate_doc", leak)
    assert run_mutant(example, fresh_root(tmp_path), ["torchtune"]).kind == "crash"
    monkeypatch.undo()
    monkeypatch.setattr("ftspec.spec.diagnostics.redact", lambda text: text)
    for module in ("ftspec.spec.rules.secrets", "ftspec.spec.schema_check"):
        monkeypatch.setattr(f"{module}.find_secret", lambda *a, **k: None)
    leaked = run_mutant(example.replace("\nlauncher: ", f"\nlauncher: {SECRET} #", 1),
                        fresh_root(tmp_path), ["torchtune"])
    assert leaked.kind == "echo"


@private_pid_namespace
def test_mutated_run_records_never_crash_or_signal(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Hand-edited run records (``fuzz_records``), fixed seeds: every local command answers
    with a result or an error naming the record; the bystander the record names lives."""
    from security.fuzz_records import (
        RECORD_BAD_CLASSES,
        fresh_project,
        mutate_record,
        run_record_mutant,
    )
    from security.fuzzing import Tally
    from security.localstate import bystander

    victim = bystander()
    tally = Tally()
    try:
        for n in range(40):
            root = fresh_project(tmp_path, n)
            monkeypatch.chdir(root)
            text = mutate_record(victim.pid, victim.create_time(), seed=n, count=1 + n % 3)
            tally.add(run_record_mutant(text, root, victim.pid), text)
    finally:
        victim.kill()
    assert not any(tally.classes.get(k) for k in RECORD_BAD_CLASSES), tally.bad[:3]
    assert tally.classes.get("refused", 0) > 10 and tally.mutants == 40, tally.classes


@private_pid_namespace
def test_the_record_engine_detects_a_signal_and_a_crash(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The record fuzz can fail: with the OS proof switched off, a valid record naming the
    bystander gets it killed (here, inside the namespace); a parser bug is a crash."""
    import contextlib
    import json

    import psutil
    from ftspec.reconciler.local import procs

    from security.fuzz_records import run_record_mutant
    from security.localstate import bystander, project, record_for

    victim = bystander()
    root = project(tmp_path / "p")
    monkeypatch.chdir(root)
    text = json.dumps(record_for(victim.pid, victim.create_time()))
    try:
        assert run_record_mutant(text, root, victim.pid).kind == "ok"
        monkeypatch.setattr(procs, "identify", lambda pid, ct, run_dir: procs.Identity(
            procs.ProcRef(pid, victim.create_time())))
        assert run_record_mutant(text, root, victim.pid).kind == "signalled"
        monkeypatch.undo()
        monkeypatch.chdir(root)

        def bug(raw: bytes, spec_id: str) -> object:
            raise RuntimeError("bug")

        monkeypatch.setattr("ftspec.reconciler.local.state.load_record", bug)
        assert run_record_mutant(text, root, victim.pid).kind == "crash"
    finally:
        with contextlib.suppress(psutil.Error):
            victim.kill()
