"""Cluster answers mutated into hostile shapes (``answer_fuzzing.py``) never make an internal
error, a traceback or a hang in the commands that read them; a handful of seeds per backend
here, a longer run with ``python tests/security/answer_fuzzing.py CASES``."""

from __future__ import annotations

from pathlib import Path

import pytest

from security.answer_fuzzing import COMMANDS, run_case

CASES = [(backend, command, seed) for backend, commands in COMMANDS.items()
         for command in commands for seed in (1, 2)]


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "command", "seed"), CASES)
def test_mutated_answers_are_read_or_refused(backend: str, command: str, seed: int,
                                             tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    outcome, text = run_case(backend, command, seed, tmp_path / "kubeconfig")
    assert outcome in ("ok", "refused"), f"{outcome}:\n{text[-3000:]}"
