"""The engine writes every backend's ML lines (``engine.settled``): from the summaries a
backend's plan hands it with a change that alters an applied run (``Planned.summaries``:
the run as applied and as desired), what differs in ML terms, before the backend's own
lines; the plan the user sees or saves holds plain changes, without the summaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ftspec.reconciler import engine
from ftspec.reconciler.applied import RECORD_KEY, AppliedRecord, encode
from ftspec.reconciler.kubernetes.planner import ObjectInput, decide, planned
from ftspec.reconciler.model import Action, Change, Planned, Summaries
from ftspec.reconciler.saved import load_plan, save_plan
from helpers.given_plan import GivenPlan
from unit.test_reconciler_engine import live_of, trainjob

APPLIED = {"model": "llama3_2-1b", "learning rate": "0.0002", "GPUs": "8", "epochs": "1"}
DESIRED = {"model": "llama3_2-1b", "learning rate": "0.0001", "GPUs": "16", "epochs": "1",
           "row format": "chat"}


def _changes() -> tuple[Change, ...]:
    return (
        Planned("fake.run.a", Action.REPLACE, {"x": 1}, {"x": 2},
                ml_changes=("data.train.uri content changed",),
                summaries=Summaries(APPLIED, DESIRED)),
        Change("fake.run.b", Action.CREATE, None, {"x": 3}),
        Planned("fake.run.d", Action.REPLACE, {"x": 6}, {"x": 7}, reason="stopped",
                ml_changes=("own line",)),  # summaries not read: the backend's lines only
        Planned("fake.run.c", Action.UPDATE, {"x": 4}, {"x": 5},
                summaries=Summaries(APPLIED, APPLIED)),
    )


def test_the_engine_writes_each_changes_ml_lines_from_the_backends_summaries() -> None:
    plan = engine.plan(GivenPlan(*_changes()), [])  # type: ignore[arg-type]
    a, b, d, c = plan.changes
    # what differs, in the desired summary's order; a quantity the run did not have before
    # (row format) is not a change; then the backend's own line
    assert a.ml_changes == ("learning rate 0.0002 -> 0.0001", "GPUs 8 -> 16",
                            "data.train.uri content changed")
    assert b.ml_changes == () and c.ml_changes == () and d.ml_changes == ("own line",)
    assert [type(x) for x in plan.changes] == [Change] * 4  # no summaries kept
    assert d == Change("fake.run.d", Action.REPLACE, {"x": 6}, {"x": 7}, reason="stopped",
                       ml_changes=("own line",))
    assert [x.action for x in plan.changes] == [Action.REPLACE, Action.CREATE,
                                                Action.REPLACE, Action.UPDATE]


def test_summaries_are_never_part_of_the_plans_json_or_a_saved_plan(tmp_path: Path) -> None:
    plan = engine.plan(GivenPlan(*_changes()), [])  # type: ignore[arg-type]
    assert all("summaries" not in change for change in plan.to_json()["changes"])
    save_plan(plan, tmp_path / "plan.json")
    back = load_plan(tmp_path / "plan.json")
    assert back.changes == plan.changes
    assert back.changes[0].ml_changes == plan.changes[0].ml_changes


def _recorded(obj: dict[str, Any], summary: dict[str, str]) -> dict[str, Any]:
    record = AppliedRecord("1", "w", {}, summary, {})
    obj["metadata"].setdefault("annotations", {})[RECORD_KEY] = encode(record)
    return obj


def test_a_kubernetes_change_hands_the_engine_the_summaries_of_what_it_updates() -> None:
    live = live_of(_recorded(trainjob(), APPLIED))
    changed = _recorded(trainjob(trainer={"numNodes": 2}), DESIRED)
    inp = ObjectInput("kubeflow", "a", "a.yaml", changed, live, changed)
    change = planned(decide(inp), inp)
    assert isinstance(change, Planned) and change.action is not Action.NOOP
    assert engine.settled(change).ml_changes == ("learning rate 0.0002 -> 0.0001",
                                                 "GPUs 8 -> 16")
    same = _recorded(trainjob(), APPLIED)
    kept = ObjectInput("kubeflow", "a", "a.yaml", same, live, same)
    kept_change = engine.settled(planned(decide(kept), kept))
    assert type(kept_change) is Change and kept_change.ml_changes == ()  # a run kept: none
    new = ObjectInput("kubeflow", "a", "a.yaml", changed, None, changed)
    assert type(planned(decide(new), new)) is Change  # a create: nothing applied
