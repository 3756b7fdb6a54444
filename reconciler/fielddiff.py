"""Field-level diff of two plain JSON trees -> ``FieldChange`` rows with raw paths.

Small and dependency-free on purpose (deepdiff costs ~0.6 s to import here): dicts are
compared key by key, lists of equal length item by item, anything else as a whole value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ftspec.reconciler.model import FieldChange

_MISSING = object()
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    part = key if _KEY.match(key) else f'["{key}"]'
    if not path:
        return part
    return f"{path}{part}" if part.startswith("[") else f"{path}.{part}"


def _walk(path: str, before: Any, after: Any) -> Iterator[tuple[str, Any, Any]]:
    if before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in list(before) + [k for k in after if k not in before]:
            yield from _walk(join(path, key), before.get(key, _MISSING), after.get(key, _MISSING))
        return
    if (isinstance(before, list) and isinstance(after, list) and len(before) == len(after)
            and any(isinstance(item, (dict, list)) for item in before + after)):
        for i, (b, a) in enumerate(zip(before, after)):
            yield from _walk(join(path, i), b, a)
        return
    yield path, before, after


def diff(before: Any, after: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(path, before, after) for every differing leaf; a missing side is ``None``."""
    return [
        (p, None if b is _MISSING else b, None if a is _MISSING else a)
        for p, b, a in _walk(prefix, before, after)
    ]


def count_leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(count_leaves(v) for v in value.values()) or 1
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return sum(count_leaves(v) for v in value) or 1
    return 1


def field_changes(before: Any, after: Any, forces: Any = None) -> tuple[FieldChange, ...]:
    """Diff rows as ``FieldChange``; ``forces(path) -> bool`` marks replacement-forcing ones."""
    rows = []
    for path, b, a in diff(before, after):
        rows.append(FieldChange(path, b, a, bool(forces and forces(path))))
    return tuple(rows)
