"""The local backend hands the engine its replace of a run (``Planned.replacing``) to be
asked only where the engine finds the run's inputs changed: a kept run's plan reads nothing
of the run's kept generations (``LocalBackend._keeps``), as before the engine compared the
inputs; a run whose inputs changed is replaced with what its replace keeps. The backend's
reads of the run (record, process, launch files) are given here."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ftspec.reconciler import engine
from ftspec.reconciler.applied import AppliedRecord, encode
from ftspec.reconciler.backend import Desired
from ftspec.reconciler.inputs import InputState
from ftspec.reconciler.local import backend as local
from ftspec.reconciler.model import Action, Phase
from helpers.jobs import make_job

KEPT = "its run folder .ftspec/runs/a is kept as generation 2"


def _state(tag: str) -> tuple[InputState, ...]:
    return (InputState("data.train.uri", "file://d.jsonl", sha256=tag * 64),)


def _backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, asked: list[str]) -> Any:
    job = make_job()
    record = SimpleNamespace(
        spec_id=job.spec_id, spec_file="a.yaml", run_dir=".ftspec/runs/a", name="",
        applied=encode(AppliedRecord("1", job.written, {}, {}, {"data.train.uri": _state(
            "a")[0]})), summary=dict(job.summary), supervisor_pid=7)
    backend = local.LocalBackend(tmp_path)
    backend.store = SimpleNamespace(  # type: ignore[assignment]
        read=lambda spec_id: record, all=list, digest=lambda spec_id: "d")
    monkeypatch.setattr(backend, "_after", lambda d: {"run_dir": record.run_dir,
                                                      "summary": dict(job.summary)})
    monkeypatch.setattr(backend, "_keeps", lambda r, j: asked.append(r.spec_id) or KEPT)
    monkeypatch.setattr(local, "observe", lambda r, root: SimpleNamespace(
        phase=Phase.SUCCEEDED, active=False, stop_requested=False, message=""))
    monkeypatch.setattr(local, "_before", lambda view: {"phase": "Succeeded"})
    monkeypatch.setattr(local, "run_changes", lambda r, after, old: [])
    monkeypatch.setattr(local, "file_move", lambda *args: None)
    return backend, job


def test_a_kept_run_reads_nothing_of_what_a_replace_would_keep(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked: list[str] = []
    backend, job = _backend(monkeypatch, tmp_path, asked)
    (kept,) = engine.plan(backend, [Desired(job, (), "a.yaml", inputs=_state("a"))]).changes
    assert kept.action is Action.NOOP and asked == []
    (replaced,) = engine.plan(backend, [Desired(job, (), "a.yaml",
                                                inputs=_state("b"))]).changes
    assert replaced.action is Action.REPLACE and asked == [job.spec_id]
    assert replaced.reason == ("the content of data.train.uri changed since the run was "
                               f"applied: a new run trains on the bytes there now; {KEPT}")
