"""The Kubernetes planner settles each object's change with the engine (``engine.settled``)
before its own later steps, which read the settled change: a dry run the server refused
stands unless the object is replaced, a kept or updated TrainJob's runtime drift is read,
and a deferred check's note follows the change's reason. An object whose inputs' content
changed is a replace by then (``plan_steps.plan_object`` with the server's reads given)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from ftspec.reconciler.applied import RECORD_KEY, AppliedRecord, encode
from ftspec.reconciler.inputs import InputState
from ftspec.reconciler.kubernetes import plan_steps
from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.plan_steps import Context, Draft, Pending, ServerRead
from ftspec.reconciler.model import Action
from unit.test_reconciler_engine import live_of, trainjob

WHY = ("the content of data.train.uri changed since the run was applied: a new run trains "
       "on the bytes there now")


def _read(tag: str) -> dict[str, Any]:
    state = InputState("data.train.uri", "file://d.jsonl", sha256=tag * 64)
    obj = trainjob()
    record = AppliedRecord("1", "w", {}, {}, {state.field: state})
    obj["metadata"]["annotations"] = {RECORD_KEY: encode(record)}
    return obj


def _plan(monkeypatch: pytest.MonkeyPatch, desired_tag: str, refused: ApiError | None = None,
          deferred: str | None = None) -> tuple[Draft, list[Any]]:
    live, desired = live_of(_read("a")), _read(desired_tag)
    monkeypatch.setattr(plan_steps, "read_server", lambda ctx, p: ServerRead(
        live, None if deferred else desired, [], refused, deferred))
    submitted: list[Any] = []
    reader = SimpleNamespace(submit=lambda *args: submitted.append(args))
    ctx = Context(reader, None, {}, {"a"}, None)  # type: ignore[arg-type]
    job = SimpleNamespace(target="kubeflow", spec_id="a")
    d = SimpleNamespace(job=job, spec_file="a.yaml", doc=None)
    draft = Draft([])
    plan_steps.plan_object(ctx, Pending(d, desired, "kubeflow.TrainJob.ml/j", None,
                                        None), draft)  # type: ignore[arg-type]
    return draft, submitted


def test_a_refused_dry_run_stands_unless_the_changed_inputs_replace_the_object(
        monkeypatch: pytest.MonkeyPatch) -> None:
    refusal = ApiError("spec.trainer is immutable", status=422)
    draft, _ = _plan(monkeypatch, "a", refusal)
    assert draft.errors == [refusal] and not draft.changes
    draft, _ = _plan(monkeypatch, "b", refusal)
    (change,) = draft.changes
    assert not draft.errors and change.action is Action.REPLACE and change.reason == WHY


def test_runtime_drift_is_read_for_a_kept_object_not_for_one_its_inputs_replace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    draft, submitted = _plan(monkeypatch, "a")
    assert draft.changes[0].action is Action.NOOP and len(submitted) == 1
    draft, submitted = _plan(monkeypatch, "b")
    assert draft.changes[0].action is Action.REPLACE and submitted == []


def test_a_deferred_checks_note_follows_the_inputs_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    note = "checked after its TrainingRuntime rt exists: this plan creates it"
    draft, _ = _plan(monkeypatch, "b", deferred=note)
    (change,) = draft.changes
    assert change.reason == f"{WHY}; {note}"
    assert draft.warnings == [f"kubeflow.TrainJob.ml/j: {note}"]
