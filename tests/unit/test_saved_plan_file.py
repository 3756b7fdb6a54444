"""Saved plan files are untrusted input: recognised by content, validated, written safely."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.local.lockinfo import describe, holder_record
from ftspec.reconciler.model import Action, Change, FieldChange, Plan
from ftspec.reconciler.saved import is_saved_plan, load_document, load_plan, save_plan

PLAN = Plan("local", (Change("local.run.a", Action.CREATE, None, {"argv": ["tune"]},
                             fields=(FieldChange("argv", None, ["tune"], True),),
                             upgrade="from the ftspec upgrade"),),
            {"local.run.a": "absent"}, {"a.yaml": "w"},
            inputs={"specs": ["/x/a.yaml"], "overlays": [], "sets": ["a=1"],
                    "namespace": None})


@pytest.mark.parametrize("name", ["tfplan", "lr.plan", "plan.json", "no-extension"])
def test_any_name_round_trips_private(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    save_plan(PLAN, path)
    assert is_saved_plan(path)
    assert load_plan(path) == PLAN
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_a_spec_is_not_a_plan(tmp_path: Path) -> None:
    spec = tmp_path / "plan.json"
    spec.write_text('{"apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune"}')
    assert not is_saved_plan(spec)
    (tmp_path / "dir").mkdir()
    assert not is_saved_plan(tmp_path / "dir") and not is_saved_plan(tmp_path / "missing")


def test_writes_replace_a_planted_link_not_its_target(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(victim, tmp_path / "tfplan")
    save_plan(PLAN, tmp_path / "tfplan")
    assert victim.read_text() == "keep" and not (tmp_path / "tfplan").is_symlink()


def _doc(tmp_path: Path) -> dict[str, object]:
    save_plan(PLAN, tmp_path / "p")
    return dict(json.loads((tmp_path / "p").read_text()))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["changes"][0].update(action="explode"), "changes[0].action"),
    (lambda d: d.update(backend="elsewhere"), "backend"),
    (lambda d: d["changes"][0].update(fields="x"), "changes[0].fields"),
    (lambda d: d.update(read_digests={"a": 1}), "read_digests"),
    (lambda d: d.update(inputs={"specs": "a.yaml"}), "inputs.specs"),
    (lambda d: d["changes"][0]["after"].update(argv=["sh"]), "changed after it was saved"),
])
def test_edited_or_wrong_plans_are_refused_with_where(tmp_path: Path, edit: object,
                                                       message: str) -> None:
    doc = _doc(tmp_path)
    edit(doc)  # type: ignore[operator]
    if message != "changed after it was saved":
        doc.pop("checksum")  # a plan without a checksum is still checked field by field
    path = tmp_path / "edited"
    path.write_text(json.dumps(doc))
    with pytest.raises(BackendError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_document(path)


def test_corrupt_and_future_plans(tmp_path: Path) -> None:
    path = tmp_path / "p"
    path.write_text('{"kind": "ftspec-plan", "format_version": 2, "changes": [')
    assert is_saved_plan(path)
    with pytest.raises(BackendError, match="cannot read saved plan"):
        load_plan(path)
    doc = _doc(tmp_path)
    doc["format_version"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(BackendError, match="format_version 99"):
        load_plan(path)


def test_lock_holder_is_described_and_garbage_is_not_an_error() -> None:
    text = describe(holder_record())
    assert text.startswith(f"pid {os.getpid()} (user ") and " s ago" in text
    assert "`ftspec" in text
    assert describe(b"1234\n") == "pid 1234"
    assert describe(b"\xff{not json") == "an unknown holder"
    assert describe(b'{"pid": "x", "since": "y"}') == "an unknown process"
