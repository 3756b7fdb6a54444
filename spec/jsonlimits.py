"""JSON from an untrusted source, parsed within limits: nesting depth and number size.

The standard library's parser recurses once per nested array or object (a few thousand
``[`` end in ``RecursionError``, and whatever walks the result afterwards recurses as
deep), reads a 4,000-digit integer whole and turns ``1e999`` into ``inf``. Before parsing,
one scan over the text's tokens (strings skipped whole, so brackets and digits inside them
do not count) finds the first bracket past ``max_depth`` and the first number longer than
``max_digits``, and reports it at its line and column; only then does ``json.loads`` run,
with ``NaN`` / ``Infinity`` refused and any float that would be infinite refused too. No
parser library is used: the scan is one regular expression, and the parse is the standard
library's.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_DIGITS = 64

_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|-?[0-9][0-9.eE+-]*')
r"""A string (skipped whole), a bracket or a number. The string is ``"(?:[^"\\]|\\.)*"``
written as runs of plain characters between escapes, which the regex engine takes a run at
a time rather than a character at a time: the same matches, a quarter of the scan time of a
CRD's 190 KB (most of it descriptions)."""


class JsonLimitError(ValueError):
    """The text is not JSON within the limits; ``line`` and ``col`` are 1-based."""

    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(f"line {line} column {col}: {message}")
        self.message = message
        self.line = line
        self.col = col


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def check_limits(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH,
                 max_digits: int = DEFAULT_MAX_DIGITS) -> None:
    """Raise :class:`JsonLimitError` at the first bracket nested deeper than ``max_depth``
    or the first number with more than ``max_digits`` characters."""
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first == '"':
            continue
        if first in "[{":
            depth += 1
            if depth > max_depth:
                raise JsonLimitError(f"nested deeper than {max_depth} levels",
                                     *_position(text, match.start()))
        elif first in "]}":
            depth -= 1
        elif len(token) > max_digits:
            raise JsonLimitError(f"a number of {len(token)} characters (at most {max_digits})",
                                 *_position(text, match.start()))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text} is too large")
    return value


def loads_limited(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH,
                  max_digits: int = DEFAULT_MAX_DIGITS) -> Any:
    """``json.loads(text)`` within the limits; ``ValueError`` (a ``JsonLimitError`` with
    the place for a limit, ``json.JSONDecodeError`` for bad JSON) for anything else."""
    check_limits(text, max_depth=max_depth, max_digits=max_digits)
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
