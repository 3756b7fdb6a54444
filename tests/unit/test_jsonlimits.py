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
