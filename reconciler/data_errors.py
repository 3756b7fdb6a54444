"""Framework errors that mean a bad value in a dataset row, read from a failed run's log.

A launcher meets a null or a missing column only when a step reaches its row, and says so
in its own words: torchtune 0.6.1's ``Message`` asserts ``content must be of type
List[Dict[str, Any]], got None`` (its formatting of the offending value), its transforms
raise ``KeyError: 'output'`` for a column a row lacks, ShareGPT/chat rows whose
conversation is null raise ``TypeError: 'NoneType' object is not iterable``. Each known
error becomes a ``DataError``: what to look for in the rows (``reconciler.local.datascan``
finds the row, the column and the spec field). One table; add a framework's error here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DataError:
    problem: str
    """``null``, ``value`` (a value of the wrong type, ``value`` as printed) or ``missing``."""
    value: str | None = None
    column: str | None = None

    def matches(self, problem: str, value: str | None, column: str) -> bool:
        """Whether a row problem (``datascan.RowProblem``'s words) is this error's."""
        if self.column is not None and column != self.column:
            return False
        if self.problem == "null":
            return problem == "is null"
        if self.problem == "missing":
            return problem == "is missing"
        return value is not None and value == self.value


_KNOWN: tuple[tuple[str, re.Pattern[str]], ...] = (
    # torchtune.data.Message: f"content must be of type List[Dict[str, Any]], got {content}"
    ("AssertionError", re.compile(r"^content must be of type List\[Dict\[str, Any\]\], "
                                  r"got (?P<value>.*)$", re.DOTALL)),
    # a transform's sample[column] on a row without that column
    ("KeyError", re.compile(r"^'(?P<column>[^']+)'$")),
    # iterating a null conversation (torchtune's ShareGPT/OpenAI message transforms)
    ("TypeError", re.compile(r"^'NoneType' object is not iterable$")),
)


def data_error(exception: dict[str, Any] | None) -> DataError | None:
    """The bad value a failed run's last exception (``failure.last_exception``) points at,
    or None when it is not a known data error."""
    if not exception:
        return None
    kind = str(exception.get("type") or "").rsplit(".", 1)[-1]
    message = str(exception.get("message") or "")
    for name, pattern in _KNOWN:
        hit = pattern.match(message) if kind == name else None
        if hit is None:
            continue
        groups = hit.groupdict()
        if "value" in groups:
            value = groups["value"]
            return DataError("null") if value == "None" else DataError("value", value)
        if "column" in groups:
            return DataError("missing", column=groups["column"])
        return DataError("null")
    return None
