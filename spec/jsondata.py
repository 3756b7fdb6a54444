"""Deep copies of JSON-shaped data (dicts, lists, strings, numbers, booleans, None).

``copy.deepcopy`` memoizes every object it visits, to keep shared references shared and
to survive cycles; manifests, configs and parsed specs have neither, and the memo makes it
several times slower than walking the containers. Anything that is not JSON-shaped still
goes through ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
from typing import TypeVar

T = TypeVar("T")

_ATOMS = frozenset({str, int, float, bool, type(None)})


def copy_json(value: T) -> T:
    """A deep copy of ``value``: new dicts and lists all the way down, atoms shared."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {k: copy_json(v) for k, v in value.items()}  # type: ignore[attr-defined,return-value]
    if kind is list:
        return [copy_json(v) for v in value]  # type: ignore[attr-defined,return-value]
    if kind is tuple:
        return tuple(copy_json(v) for v in value)  # type: ignore[attr-defined,return-value]
    return copy.deepcopy(value)
