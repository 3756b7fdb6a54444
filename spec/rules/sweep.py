"""``sweep.grid``: every path names a field of the spec, the grid stays small, no value twice.

Whether a value fits its field is each point's own validation (``compiler/sweep.py``), at
the grid value."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, did_you_mean
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules._diag import error
from ftspec.spec.sweep import MAX_POINTS, count, key_path
from pydantic import BaseModel

FIXED = {("apiVersion",): "the format's version", ("kind",): "the document kind",
         ("metadata",): "the run's identity (each point gets its own name from it)",
         ("sweep",): "the sweep itself",
         ("deploy", "target"): "where the runs go (every point goes to one backend)"}
"""Paths a grid may not set, with why."""


def grid_is_valid(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    if spec.sweep is None:
        return
    grid = spec.sweep.grid
    if count(grid) > MAX_POINTS:
        yield error(("sweep", "grid"), f"the grid has {count(grid)} points; a sweep runs at "
                    f"most {MAX_POINTS}", "sweep-size",
                    hint="split it into several spec files, or sweep fewer values")
    for dotted, values in grid.items():
        at = ("sweep", "grid", dotted)
        path = key_path(dotted)
        fixed = next((why for p, why in FIXED.items() if path[: len(p)] == p), None)
        if fixed is not None:
            yield error(at, f"{dotted} cannot be swept: it is {fixed}", "sweep-fixed-path")
            continue
        problem = _unknown(path)
        if problem is not None:
            yield error(at, problem[0], "sweep-path", hint=problem[1])
            continue
        seen: list[Any] = []
        for i, value in enumerate(values):
            if any(type(value) is type(v) and value == v for v in seen):
                yield error((*at, i), f"{dotted} lists {value!r} twice: two points would be "
                            "the same run", "sweep-duplicate")
            seen.append(value)


def _unknown(path: tuple[str | int, ...]) -> tuple[str, str | None] | None:
    """Why ``path`` names no field of the spec (message, hint), or None when it does."""
    node: Any = FineTuneSpec
    for depth, part in enumerate(path):
        where = ".".join(map(str, path[:depth])) or "the spec"
        kinds = _kinds(node)
        models = [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]
        if any(typing.get_origin(k) is dict or k is dict for k in kinds):
            return None  # free keys (overrides.torchtune.*): the launcher's business
        lists = [k for k in kinds if typing.get_origin(k) is list]
        if lists and isinstance(part, int):
            node = typing.get_args(lists[0])[0] if typing.get_args(lists[0]) else Any
            continue
        if not models:
            return (f'{where} is a value; it has no field "{part}"', None)
        fields = {name for m in models for name in m.model_fields}
        if not isinstance(part, str) or part not in fields:
            return (f'unknown field "{part}" in {where}', did_you_mean(str(part), fields))
        owner = next(m for m in models if part in m.model_fields)
        node = owner.model_fields[part].annotation
    return None


def _kinds(annotation: Any) -> list[Any]:
    """The alternatives of an annotation (``X | None``, ``Annotated[X, ...]``), unwrapped."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _kinds(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [k for a in typing.get_args(annotation) for k in _kinds(a)]
    return [annotation]
