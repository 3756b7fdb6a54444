"""Overrides: ``--set`` scalars and paths, ``-f`` overlays, and where their errors point."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.spec.diagnostics import Span, SpecError
from ftspec.spec.loader import parse_yaml
from ftspec.spec.overrides import apply_overlay, apply_sets, parse_set
from ftspec.spec.validate import validate_doc

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BASE_TEXT = """\
a:
  b: 1
  items:
    - {x: 1}
    - {x: 2}
name: demo
"""


@pytest.mark.parametrize(("expr", "value"), [
    ("a.b=1", 1), ("a.b=1.5", 1.5), ("a.b=2e-4", 2e-4), ("a.b=true", True), ("a.b=yes", "yes"),
    ("a.b=on", "on"), ("a.b=null", None), ("a.b=2024-01-01", "2024-01-01"), ("a.b=", ""),
    ("a.b=hello world", "hello world"), ("a.b='007'", "007"), ("a.b=[1", "[1"),
    ("a.b=x=y", "x=y"), ("a.b=[1, 2]", [1, 2]),
])
def test_set_values_are_yaml12_scalars(expr: str, value: object) -> None:
    path, parsed, _ = parse_set(expr, 0)
    assert path == ("a", "b")
    assert parsed == value
    assert type(parsed) is type(value)


def test_set_splits_at_the_first_equals_and_points_at_the_value() -> None:
    path, value, span = parse_set("metadata.description=a=b", 3)
    assert (path, value) == (("metadata", "description"), "a=b")
    assert span == Span("--set[3]", 1, len("metadata.description=") + 1)


def test_set_list_index_replaces_and_appends() -> None:
    doc = apply_sets(parse_yaml(BASE_TEXT, "s.yaml"), ["a.items.1.x=9", "a.items.2.x=3"])
    assert doc.data["a"]["items"] == [{"x": 1}, {"x": 9}, {"x": 3}]
    assert doc.span_of(("a", "items", 1, "x")) == Span("--set[0]", 1, 13)
    assert doc.span_of(("a", "items", 0, "x")) == Span("s.yaml", 4, 11)


def test_set_does_not_change_the_original() -> None:
    base = parse_yaml(BASE_TEXT, "s.yaml")
    apply_sets(base, ["a.b=5"])
    assert base.data["a"]["b"] == 1


@pytest.mark.parametrize(("expr", "words"), [
    ("nonsense", "expected KEY.PATH=VALUE"),
    ("=3", "expected KEY.PATH=VALUE"),
    ("a..b=1", "empty key"),
    ("a.items.7.x=1", "past the end"),
    ("name.first=x", "is a string"),
    ("a.b.0=1", "is a number"),
    ("a.0=1", "cannot index"),
])
def test_set_errors_point_at_the_flag(expr: str, words: str) -> None:
    with pytest.raises(SpecError) as info:
        apply_sets(parse_yaml(BASE_TEXT, "s.yaml"), ["a.b=2", expr])
    diag = info.value.diagnostics[0]
    assert words in diag.summary
    assert diag.span is not None and diag.span.file == "--set[1]" and diag.span.line == 1


def test_set_value_errors_point_at_the_value_column() -> None:
    doc = parse_yaml((EXAMPLES / "kubeflow-llama32-1b-lora-alpaca.yaml").read_text(), "k.yaml")
    result = validate_doc(apply_sets(doc, ["training.learning_rate=fast"]))
    [diag] = result.diagnostics.errors
    assert diag.span == Span("--set[0]", 1, len("training.learning_rate=") + 1)
    assert diag.summary == 'expected a number, got a string "fast"'


def test_overlay_merges_mappings_and_replaces_lists() -> None:
    base = parse_yaml(BASE_TEXT, "base.yaml")
    over = parse_yaml("a:\n  b: 2\n  items: [{x: 7}]\nnew: 1\n", "over.yaml")
    doc = apply_overlay(base, over)
    assert doc.data == {"a": {"b": 2, "items": [{"x": 7}]}, "name": "demo", "new": 1}
    assert doc.span_of(("a", "b")) == Span("over.yaml", 2, 6)
    assert doc.span_of(("a", "items", 0, "x")) == Span("over.yaml", 3, 15)
    assert doc.span_of(("name",)) == Span("base.yaml", 6, 7)
    assert doc.span_of(("a", "items", 1)) == Span("over.yaml", 3, 3)  # gone: the list's key


def test_overlay_errors_point_at_the_overlay_file(tmp_path: Path) -> None:
    doc = parse_yaml((EXAMPLES / "kubeflow-llama32-1b-lora-alpaca.yaml").read_text(), "k.yaml")
    over = parse_yaml("training:\n  micro_batch_size: many\n", "prod.yaml")
    result = validate_doc(apply_overlay(doc, over))
    assert [(str(d.span), d.summary) for d in result.diagnostics.errors] == [
        ("prod.yaml:2:21", 'expected an integer, got a string "many"'),
    ]
