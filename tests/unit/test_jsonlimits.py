"""JSON within limits: the first bracket too deep or number too long, at its line:col."""

from __future__ import annotations

import json

import pytest
from ftspec.spec.jsonlimits import JsonLimitError, loads_limited


def test_plain_json_parses_as_the_standard_library_does() -> None:
    text = '{"a": [1, 2.5, -3e2, "x[{\\"", {"b": null}], "c": true}'
    assert loads_limited(text) == json.loads(text)


def test_brackets_and_digits_inside_strings_do_not_count() -> None:
    text = json.dumps({"s": "[" * 500 + "9" * 500})
    assert loads_limited(text, max_depth=2, max_digits=4) == json.loads(text)


def test_depth_is_reported_where_it_is_passed() -> None:
    with pytest.raises(JsonLimitError) as err:
        loads_limited('{\n  "a": [[[1]]]}', max_depth=3)
    assert (err.value.line, err.value.col, err.value.message) == (
        2, 10, "nested deeper than 3 levels")
    assert loads_limited('{"a": [[1]]}', max_depth=3) == {"a": [[1]]}


def test_long_and_infinite_numbers_are_refused() -> None:
    with pytest.raises(JsonLimitError, match="line 1 column 7: a number of 5 characters"):
        loads_limited('{"a": 12345}', max_digits=4)
    with pytest.raises(ValueError, match="too large"):
        loads_limited("[1e999]")
    with pytest.raises(ValueError, match="Infinity is not a JSON number"):
        loads_limited("[Infinity]")


def test_the_token_scan_matches_its_plain_form() -> None:
    """``_TOKEN`` writes a string as runs of plain characters between escapes (faster): on
    any text (unterminated strings, escapes at the end, newlines) it finds the same tokens
    as the plain alternation of one character or one escape at a time."""
    import re

    from ftspec.spec.jsonlimits import _TOKEN
    from hypothesis import given, settings
    from hypothesis import strategies as st

    plain = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?[0-9][0-9.eE+-]*')

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(st.text(alphabet='"\\[]{}09-.eE+ a\n', max_size=60))
    def same(text: str) -> None:
        assert [m.span() for m in _TOKEN.finditer(text)] == \
            [m.span() for m in plain.finditer(text)]

    same()
    crd_like = json.dumps({"description": 'a "quoted" \\ path\n' * 50, "enum": [1, -2.5e3]})
    assert [m.group() for m in _TOKEN.finditer(crd_like)] == \
        [m.group() for m in plain.finditer(crd_like)]
