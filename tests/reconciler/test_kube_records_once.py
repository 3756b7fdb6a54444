"""The Kubernetes planner decodes an object's applied record once where the live and the
desired object carry the same text (every object unchanged since applied), and each once
where they differ; the records it hands the engine are the same either way
(``planner.planned``; decoding inflates the record's defaults, a plan's cost per spec)."""

from __future__ import annotations

from typing import Any

import pytest
from ftspec.reconciler import applied
from ftspec.reconciler.applied import RECORD_KEY, AppliedRecord, encode
from ftspec.reconciler.inputs import InputState
from ftspec.reconciler.kubernetes import planner
from ftspec.reconciler.kubernetes.planner import ObjectInput, decide, planned
from ftspec.reconciler.model import Planned
from unit.test_reconciler_engine import live_of, trainjob


def _with_record(tag: str, summary: dict[str, str]) -> dict[str, Any]:
    state = InputState("data.train.uri", "file://d.jsonl", sha256=tag * 64)
    obj = trainjob()
    record = AppliedRecord("1", "w", {"training.seed": 42}, summary, {state.field: state})
    obj["metadata"]["annotations"] = {RECORD_KEY: encode(record)}
    return obj


@pytest.mark.parametrize(("desired_tag", "decodes"), [("a", 1), ("b", 2)])
def test_the_applied_record_is_decoded_once_per_text(
        monkeypatch: pytest.MonkeyPatch, desired_tag: str, decodes: int) -> None:
    calls: list[Any] = []
    real = applied.decode

    def counted(text: Any) -> AppliedRecord | None:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(planner, "decode", counted)
    live = live_of(_with_record("a", {"method": "lora"}))
    desired = _with_record(desired_tag, {"method": "lora"})
    inp = ObjectInput("kubeflow", "a", "a.yaml", desired, live)
    change = planned(decide(inp), inp)
    assert len(calls) == decodes
    assert isinstance(change, Planned)
    live_record = real(live["metadata"]["annotations"][RECORD_KEY])
    desired_record = real(desired["metadata"]["annotations"][RECORD_KEY])
    assert live_record is not None and desired_record is not None
    assert change.reads is not None
    assert change.reads.applied == live_record.inputs
    assert change.reads.desired == tuple(desired_record.inputs.values())
    assert change.summaries is not None
    assert change.summaries.applied == change.summaries.desired == {"method": "lora"}
