"""The engine settles each backend's change (``engine.settled``): a backend decides on what
would run only and hands what the applied run read (``Planned.reads``); the engine compares
the inputs' content (``inputs.changed``), makes the change a replace where it changed (the
backend's own replace, ``Planned.replacing``, or the change itself with the inputs' reason
after its own), and writes the ML lines and the upgrade note of a change that updates or
replaces the run. Every change here comes from a fake backend's plan through
``engine.plan``, as the CLI and saved plans get it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ftspec.reconciler import engine
from ftspec.reconciler.applied import AppliedRecord
from ftspec.reconciler.inputs import InputState
from ftspec.reconciler.model import (
    Action,
    Change,
    FieldChange,
    Planned,
    Reads,
    Replacing,
    Summaries,
    Upgrading,
)
from ftspec.reconciler.saved import load_plan, save_plan
from helpers.given_plan import GivenPlan

DATA = "data.train.uri"
OLD = InputState(DATA, "file://d.jsonl", sha256="a" * 64, rows=3)
NEW = InputState(DATA, "file://d.jsonl", sha256="b" * 64, rows=4)
MODEL = InputState("model.uri", "file://m", sha256="c" * 64)
CHANGED = Reads({DATA: OLD, "model.uri": MODEL}, (MODEL, NEW))
SAME = Reads({DATA: OLD, "model.uri": MODEL}, (MODEL, OLD))
WHY = ("the content of data.train.uri changed since the run was applied: a new run trains "
       "on the bytes there now")
LINE = ("dataset data.train.uri (file://d.jsonl) content changed: sha256:aaaaaaaaaaaa "
        "(3 rows) -> sha256:bbbbbbbbbbbb (4 rows)")
ROW = FieldChange("inputs.data.train.uri", "sha256:aaaaaaaaaaaa (3 rows)",
                  "sha256:bbbbbbbbbbbb (4 rows)", True)
ML = Summaries({"learning rate": "0.0002"}, {"learning rate": "0.0001"})
APPLIED = AppliedRecord("1.0", "w", {"training.lr": 0.0002})
NOW = AppliedRecord("1.1", "w", {"training.lr": 0.0001})
NOTE = ("the spec is unchanged since it was applied: the change comes from the ftspec "
        "upgrade (ftspec 1.0 -> 1.1), whose defaults changed: training.lr 0.0002 -> 0.0001; "
        "to keep the old run, pin it in the spec (training.lr: 0.0002)")


def _settled(*changes: Change, replacing: tuple[str, ...] = ()) -> tuple[Change, ...]:
    return engine.plan(GivenPlan(*changes), [], replacing).changes  # type: ignore[arg-type]


def _replace_of(address: str, *, why: str | None = None, **extra: Any
                ) -> Callable[[], Replacing]:
    """A backend's replace of a run (as the Ray one words it), as the engine asks for it."""
    return lambda: Replacing(Planned(address, Action.REPLACE, {"v": 1}, {"v": 2, "id": "new"},
                             reason=": jobs are immutable, the new job gets id new",
                             fields=(FieldChange("id", "old", "new", True),), **extra), why)


def test_a_kept_run_whose_inputs_changed_is_replaced_with_the_inputs_reason() -> None:
    (change,) = _settled(Planned("fake.a", Action.NOOP, {"v": 1}, {"v": 1}, spec_file="a.yaml",
                                 moved_from="fake.old", moved="renamed", reads=CHANGED,
                                 summaries=ML))
    assert type(change) is Change
    assert change == Change("fake.a", Action.REPLACE, {"v": 1}, {"v": 1}, reason=WHY,
                            fields=(ROW,), ml_changes=("learning rate 0.0002 -> 0.0001", LINE),
                            spec_file="a.yaml", moved_from="fake.old", moved="renamed")


def test_an_update_whose_inputs_changed_says_the_inputs_after_its_own_reasons() -> None:
    own = FieldChange("spec.x", 1, 2)
    (change,) = _settled(Planned("fake.a", Action.UPDATE, {"v": 1}, {"v": 2},
                                 reason="drift: changed outside ftspec", fields=(own,),
                                 drift=True, reads=CHANGED))
    assert change.action is Action.REPLACE and change.drift
    assert change.reason == "drift: changed outside ftspec; " + WHY
    assert change.fields == (own, ROW) and change.ml_changes == (LINE,)


def test_a_run_the_backend_replaces_its_own_way_follows_the_inputs_reason() -> None:
    how = _replace_of("fake.a", summaries=ML)
    kept, failed = _settled(
        Planned("fake.a", Action.NOOP, {"v": 1}, {"v": 1, "id": "old"}, reason="job old is "
                "RUNNING", reads=CHANGED, replacing=how),
        Planned("fake.b", Action.REPLACE, {"v": 1}, {"v": 2}, reason="job old FAILED",
                drift=True, reads=CHANGED, replacing=_replace_of("fake.b")))
    assert kept == Change("fake.a", Action.REPLACE, {"v": 1}, {"v": 2, "id": "new"},
                          reason=WHY + ": jobs are immutable, the new job gets id new",
                          fields=(FieldChange("id", "old", "new", True), ROW),
                          ml_changes=("learning rate 0.0002 -> 0.0001", LINE))
    # a run redone because it failed, on other bytes now: the inputs say why, not drift
    assert failed.address == "fake.b" and failed.reason == kept.reason and not failed.drift


def test_a_change_of_what_would_run_keeps_its_reason_and_adds_the_inputs_rows() -> None:
    asked = _replace_of("fake.a", why="what would run changed (entrypoint)")
    how = asked()
    decided = Planned("fake.a", Action.REPLACE, {"v": 1}, {"v": 2, "id": "new"},
                      reason="what would run changed (entrypoint)" + (how.change.reason or ""),
                      fields=how.change.fields, reads=CHANGED, replacing=asked)
    (change,) = _settled(decided)
    assert change.reason == ("what would run changed (entrypoint): jobs are immutable, "
                             "the new job gets id new")
    assert change.fields == (FieldChange("id", "old", "new", True), ROW)
    assert change.ml_changes == (LINE,)
    (same,) = _settled(replace(decided, reads=SAME))
    assert same.reason == change.reason and same.fields == how.change.fields
    assert same.ml_changes == ()


def test_inputs_as_recorded_or_not_recorded_change_nothing() -> None:
    no_record = Reads(None, (NEW,))
    kept, unknown = _settled(
        Planned("fake.a", Action.NOOP, {"v": 1}, {"v": 1}, reason="kept", reads=SAME,
                summaries=ML, upgrading=Upgrading(APPLIED, NOW),
                replacing=_replace_of("fake.a")),
        Planned("fake.b", Action.NOOP, {"v": 1}, {"v": 1}, reads=no_record,
                replacing=_replace_of("fake.b")))
    # a run kept says no ML line nor upgrade note, whatever its summaries
    assert kept == Change("fake.a", Action.NOOP, {"v": 1}, {"v": 1}, reason="kept")
    assert unknown == Change("fake.b", Action.NOOP, {"v": 1}, {"v": 1})


def test_the_upgrade_note_is_written_where_the_run_is_updated_or_replaced() -> None:
    logging_only = Planned("fake.a", Action.NOOP, {"v": 1}, {"v": 1}, reason="only logging",
                           fields=(FieldChange("logging.every", 1, 2),), reads=SAME,
                           replacing=_replace_of("fake.a", why="what would run changed "
                                                 "(logging.every)",
                                                 upgrading=Upgrading(APPLIED, NOW)))
    update = Planned("fake.b", Action.UPDATE, {"v": 1}, {"v": 2}, upgrading=Upgrading(
        APPLIED, NOW))
    legacy = Planned("fake.c", Action.UPDATE, {"v": 1}, {"v": 2}, upgrading=Upgrading(
        None, NOW, legacy=True))
    kept, updated, old = _settled(logging_only, update, legacy)
    assert kept.action is Action.NOOP and kept.upgrade is None
    assert updated.upgrade == NOTE
    assert old.upgrade is not None and old.upgrade.startswith(
        "applied by an older ftspec, which kept no record of the spec as written")
    # the same logging change on other bytes: the backend's replace, with its note
    (replaced,) = _settled(replace(logging_only, reads=CHANGED))
    assert replaced.action is Action.REPLACE and replaced.upgrade == NOTE
    assert replaced.reason == ("what would run changed (logging.every): jobs are immutable, "
                               "the new job gets id new")


def test_replace_requested_applies_to_the_settled_change() -> None:
    kept, changed = _settled(
        Planned("fake.a", Action.NOOP, {"v": 1}, {"v": 1}, reads=SAME),
        Planned("fake.b", Action.NOOP, {"v": 1}, {"v": 1}, reads=CHANGED),
        replacing=("fake.a", "fake.b"))
    assert kept.action is Action.REPLACE and kept.reason == engine.REPLACE_REASON
    assert changed.reason == WHY  # already a replace: as the inputs say


def test_what_the_backend_hands_is_never_in_the_plans_json_or_a_saved_plan(
        tmp_path: Path) -> None:
    plan = engine.plan(GivenPlan(  # type: ignore[arg-type]
        Planned("fake.a", Action.NOOP, {"v": 1}, {"v": 1}, reads=CHANGED, summaries=ML,
                replacing=_replace_of("fake.a", upgrading=Upgrading(APPLIED, NOW)))), [])
    keys = set(plan.to_json()["changes"][0])
    assert not keys & {"reads", "replacing", "upgrading", "summaries"}
    save_plan(plan, tmp_path / "plan.json")
    assert load_plan(tmp_path / "plan.json").changes == plan.changes
