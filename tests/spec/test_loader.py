"""The YAML loader: YAML 1.2 scalars, no timestamps, duplicate keys, spans, limits."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.spec.diagnostics import Span, SpecError
from ftspec.spec.loader import MAX_SPEC_BYTES, load_spec_file, parse_yaml


def _load(text: str) -> object:
    return parse_yaml(text, "s.yaml").data


@pytest.mark.parametrize("word", ["on", "off", "yes", "no", "y", "n", "On", "YES"])
def test_yaml11_booleans_stay_strings(word: str) -> None:
    assert _load(f"a: {word}\n{word}: 1\n") == {"a": word, word: 1}


def test_yaml12_booleans_and_numbers() -> None:
    assert _load("a: true\nb: false\nc: 0o17\nd: 1e3\ne: 2.0e-4\nf: ~\ng: 010\n") == {
        "a": True, "b": False, "c": 15, "d": 1000.0, "e": 2e-4, "f": None, "g": 10,
    }


@pytest.mark.parametrize("value", ["2024-01-01", "2024-01-01T10:00:00Z", "2001-12-14 21:59:43.10 -5"])
def test_timestamps_stay_strings(value: str) -> None:
    data = _load(f"a: {value}\n")
    assert data == {"a": value}
    assert type(data["a"]) is str  # type: ignore[index]


def test_plain_python_types_only() -> None:
    data = _load("a: {b: [1, 'x', 2.5, true]}\n")
    assert data == {"a": {"b": [1, "x", 2.5, True]}}
    inner = data["a"]["b"]  # type: ignore[index]
    assert [type(v) for v in inner] == [int, str, float, bool]
    assert type(data) is dict and type(inner) is list


def test_duplicate_key_is_an_error_with_both_lines() -> None:
    with pytest.raises(SpecError) as info:
        parse_yaml("a:\n  b: 1\n  c: 2\n  b: 3\n", "s.yaml")
    diag = info.value.diagnostics[0]
    assert diag.span == Span("s.yaml", 4, 3)
    assert diag.summary == 'duplicate key "b" (first defined on line 2)'
    assert diag.code == "load.duplicate-key"


def test_spans_of_keys_values_and_list_items() -> None:
    doc = parse_yaml("top:\n  name: x\n  items:\n    - a\n    - {k: v}\nflow: {p: 1}\n", "s.yaml")
    assert doc.span_of(("top", "name")) == Span("s.yaml", 2, 9)
    assert doc.span_of(("top", "name"), key=True) == Span("s.yaml", 2, 3)
    assert doc.span_of(("top", "items", 0)) == Span("s.yaml", 4, 7)
    assert doc.span_of(("top", "items", 1, "k")) == Span("s.yaml", 5, 11)
    assert doc.span_of(("flow", "p")) == Span("s.yaml", 6, 11)
    # a section points at its key; a path not in the file at its nearest ancestor's key
    assert doc.span_of(("top",)) == Span("s.yaml", 1, 1)
    assert doc.span_of(("top", "missing", "deeper")) == Span("s.yaml", 1, 1)
    assert doc.span_of(()) == Span("s.yaml", 1, 1)


def test_non_string_keys_become_text() -> None:
    assert _load("1: a\nnull: b\n2.5: c\n") == {"1": "a", "null": "b", "2.5": "c"}


@pytest.mark.parametrize(("text", "code", "line"), [
    ("", "load.empty", 1),
    ("# only a comment\n", "load.empty", 1),
    ("- a\n", "load.shape", 1),
    ("just text\n", "load.shape", 1),
    ("a: 1\n---\nb: 2\n", "load.shape", 2),
    ("a:\n\tb: 1\n", "load.tab", 2),
    ("a: 'open\n", "load.yaml", 1),
    ("a: [1, 2\n", "load.yaml", 2),
])
def test_bad_documents(text: str, code: str, line: int) -> None:
    with pytest.raises(SpecError) as info:
        parse_yaml(text, "s.yaml")
    diag = info.value.diagnostics[0]
    assert (diag.code, diag.span.line if diag.span else None) == (code, line)
    assert diag.hint


def test_size_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: 1\n" + b"#" * MAX_SPEC_BYTES)
    with pytest.raises(SpecError) as info:
        load_spec_file(big)
    assert info.value.diagnostics[0].code == "load.too-large"


def test_directory_and_missing_file(tmp_path: Path) -> None:
    for path, words in ((tmp_path, "directory"), (tmp_path / "nope.yaml", "cannot read")):
        with pytest.raises(SpecError) as info:
            load_spec_file(path)
        assert words in info.value.diagnostics[0].summary


def test_merge_keys_merge_and_own_keys_win() -> None:
    doc = parse_yaml("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n", "s.yaml")
    assert doc.data["m"] == {"y": 3, "x": 1}
    assert doc.span_of(("m", "x")) == Span("s.yaml", 1, 14)  # where the merged value is
    assert doc.span_of(("m", "y")) == Span("s.yaml", 4, 6)


def test_non_scalar_key_is_an_error() -> None:
    with pytest.raises(SpecError) as info:
        parse_yaml("? [a, b]\n: 1\n", "s.yaml")
    assert "mapping key must be a plain value" in info.value.diagnostics[0].summary
