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


def _write(path: Path, doc: dict[str, object], *, checksum: bool = True) -> Path:
    """``doc`` written as a plan file, its checksum recomputed as anyone can (or left out)."""
    from ftspec.reconciler.saved import _checksum

    body = {k: v for k, v in doc.items() if k != "checksum"}
    if checksum:
        body["checksum"] = _checksum(body)
    path.write_text(json.dumps(body))
    return path


def test_a_plan_without_its_checksum_is_refused(tmp_path: Path) -> None:
    """Before: a plan whose checksum key was deleted was read without one."""
    path = _write(tmp_path / "p", _doc(tmp_path), checksum=False)
    with pytest.raises(BackendError, match=r"p: the document: missing key 'checksum'"):
        load_plan(path)


def test_a_recomputed_checksum_is_accepted_by_the_file_check_alone(tmp_path: Path) -> None:
    """The checksum is only an accident check: anyone can recompute it. What stops an
    edited plan is its binding to the specs (``reconciler.bound``, tests/unit/
    test_plan_binding.py)."""
    doc = _doc(tmp_path)
    doc["changes"][0]["after"]["argv"] = ["sh", "-c", "id"]  # type: ignore[index]
    assert load_plan(_write(tmp_path / "p", doc)).changes[0].after == {"argv": ["sh", "-c", "id"]}


def test_the_same_address_twice_is_refused_at_the_second(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    doc["changes"].append(doc["changes"][0])  # type: ignore[attr-defined]
    with pytest.raises(BackendError, match=r"changes\[1\]\.address: 'local.run.a' is also the "
                       r"address of changes\[0\]"):
        load_plan(_write(tmp_path / "p", doc))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["changes"][0].update(after=[1]), (r"changes\[0\]\.after: expected an object "
     "or null")),
    (lambda d: d["changes"][0].pop("action"), r"changes\[0\]: missing key 'action'"),
    (lambda d: d["changes"][0].pop("after"), r"changes\[0\]: missing key 'after'"),
    (lambda d: d.pop("backend"), "the document: missing key 'backend'"),
    (lambda d: d.update(changes={"a": 1}), "changes: expected a list"),
    (lambda d: d["changes"].append(None), r"changes\[1\]: expected an object"),
    (lambda d: d["changes"][0].update(fields=[{"path": 3}]), r"changes\[0\]\.fields\[0\]\.path"),
    (lambda d: d["changes"][0].update(address=["x"]), r"changes\[0\]\.address"),
    (lambda d: d["changes"][0].update(action=["create"]), r"changes\[0\]\.action"),
    (lambda d: d.update(specs={"a.yaml": 1}), r"specs\.a\.yaml: expected a string"),
    (lambda d: d.update(inputs={"specs": [None]}), r"inputs\.specs\[0\]: expected a string"),
    (lambda d: d.update(format_version=True), "saved plan has format_version True"),
])
def test_malformed_plans_are_located_errors(tmp_path: Path, edit: object, message: str) -> None:
    """Before: missing keys and wrong types ended in KeyError / TypeError / AttributeError
    in the backend that used them."""
    doc = _doc(tmp_path)
    edit(doc)  # type: ignore[operator]
    with pytest.raises(BackendError, match=f"^{tmp_path / 'p'}: {message}"):
        load_plan(_write(tmp_path / "p", doc))


@pytest.mark.parametrize("after, message", [
    ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
    ("1" * 401, "a number of 401 characters"),
    ("1e999", "too large"),
    ("NaN", "NaN is not a JSON number"),
])
def test_deep_nesting_and_huge_numbers_are_located_errors(tmp_path: Path, after: str,
                                                          message: str) -> None:
    """Before: 5000 brackets were a RecursionError, a 400-digit number a TypeError later."""
    path = tmp_path / "p"
    save_plan(PLAN, path)
    text = path.read_text().replace('"argv": [\n', f'"x": {after}, "argv": [\n', 1)
    assert text != path.read_text()
    path.write_text(text)
    with pytest.raises(BackendError, match=f"cannot read saved plan {path}: .*{message}"):
        load_plan(path)
