"""Fuzz the compile cache's entries: damaged ones are misses, forged ones are data of the
declared types or misses; nothing crashes or runs (``security.cache_fuzzing``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from security.cache_fuzzing import BAD_CACHE_CLASSES, run_cache_mutant
from security.fuzzing import EXAMPLES, fresh_root


@pytest.fixture(autouse=True)
def _private_state(tmp_path_factory: pytest.TempPathFactory,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.mark.slow
@settings(max_examples=25, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(example=st.sampled_from(EXAMPLES), seed=st.integers(0, 2**32 - 1),
       target=st.sampled_from(["accelerate", "kubeflow", "ray"]))
def test_mutated_cache_entries_never_crash_run_or_mislead(
        tmp_path_factory: pytest.TempPathFactory, example: Path, seed: int,
        target: str) -> None:
    root = fresh_root(tmp_path_factory.getbasetemp())
    try:
        outcome = run_cache_mutant(example, root, seed, target)
        assert outcome.kind not in BAD_CACHE_CLASSES, (outcome.kind, outcome.detail)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_cache_fuzz_can_tell_a_miss_from_a_wrong_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Control: entries left intact are hits that answer as fresh (``miss``); a cache that
    served something else would be classed ``wrong``."""
    import dataclasses

    from ftspec.compiler import cache

    from security import cache_fuzzing

    monkeypatch.setattr(cache_fuzzing, "_forge", lambda raw, rng, canary: None)
    monkeypatch.setattr(cache_fuzzing, "DAMAGE", (lambda raw, rng, entry, canary: raw,))
    assert run_cache_mutant(EXAMPLES[0], fresh_root(tmp_path), 7, "ray").kind == "miss"
    real_load = cache.load

    def misleading(slot: cache.Slot, kind: type) -> object:
        got = real_load(slot, kind)
        if got is None or getattr(got[0], "job", None) is None:
            return got
        value, deps = got
        job = dataclasses.replace(value.job, name="not-the-job")
        return dataclasses.replace(value, job=job), deps

    monkeypatch.setattr(cache, "load", misleading)
    assert run_cache_mutant(EXAMPLES[0], fresh_root(tmp_path), 7, "ray").kind == "wrong"
