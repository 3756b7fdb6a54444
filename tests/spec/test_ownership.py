"""Ownership marks (``ftspec.spec.ownership``): what ftspec writes on its objects is what it
recognises as its own when it reads them back, and nothing else passes."""

from __future__ import annotations

from ftspec.spec.ownership import (
    OWNER_LABEL,
    OWNER_SELECTOR,
    SPEC_ID_LABEL,
    owned_spec_id,
    ownership_labels,
)


def test_written_marks_are_read_back() -> None:
    marks = ownership_labels("ml/train")
    assert marks == {OWNER_LABEL: "ftspec", SPEC_ID_LABEL: "ml/train"}
    assert owned_spec_id({**marks, "team": "nlp"}) == "ml/train"
    assert OWNER_SELECTOR == f"{OWNER_LABEL}=ftspec"


def test_objects_of_others_are_not_owned() -> None:
    assert owned_spec_id(None) is None
    assert owned_spec_id({}) is None
    assert owned_spec_id({OWNER_LABEL: "helm", SPEC_ID_LABEL: "ml/train"}) is None
    assert owned_spec_id({OWNER_LABEL: "ftspec"}) is None
    assert owned_spec_id({OWNER_LABEL: "ftspec", SPEC_ID_LABEL: ""}) is None
    assert owned_spec_id({OWNER_LABEL: "ftspec", SPEC_ID_LABEL: 7}) is None
