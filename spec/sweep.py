"""A sweep's points: the grid's combinations, each point's name, and its document.

``points(grid)`` lists every combination in grid order (the first path varies slowest).
A point is a spec of its own: ``point_doc`` lays its values over the document (the source
map points each at its grid value, so a value that cannot run is reported there), drops
``sweep`` and gives the point its own output folder. ``with_point`` appends a point's
label to a name or identity: ``tiny`` + ``{lr: 1e-4, rank: 8}`` -> ``tiny-lr-1e-4-rank-8``.
The label depends on the point's own values and the grid's paths only, so adding a value
to the grid adds one point and leaves every other point's name as it was.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ftspec.spec.diagnostics import KeyPath
from ftspec.spec.loader import SourceDoc

MAX_POINTS = 64
"""More runs than anyone starts from one file by accident; a rule refuses more."""

SHORT = {"learning_rate": "lr", "micro_batch_size": "mbs", "global_batch_size": "gbs",
         "gradient_accumulation_steps": "accum", "weight_decay": "wd", "max_seq_len": "seq",
         "warmup_steps": "warmup", "target_modules": "modules", "processes_per_node": "procs",
         "gpus_per_node": "gpus"}
"""Short words for the fields swept most (the rest go by their last path part)."""


@dataclass(frozen=True)
class Point:
    """One combination: ``(dotted path, value)`` per grid dimension, in grid order, and each
    value's index in its list (where the value is in the file)."""

    values: tuple[tuple[str, Any], ...]
    index: tuple[int, ...]

    @property
    def label(self) -> str:
        words = _words([path for path, _ in self.values])
        return "-".join(f"{word}-{_value_text(value)}"
                        for word, (_, value) in zip(words, self.values, strict=True))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)

    def describe(self) -> str:
        """``training.learning_rate=0.0001, method.lora.rank=8``: for messages."""
        return ", ".join(f"{path}={json.dumps(value)}" for path, value in self.values)


def points(grid: Mapping[str, Sequence[Any]]) -> list[Point]:
    keys = list(grid)
    lists = [list(enumerate(grid[k])) for k in keys]
    return [Point(tuple((k, v) for k, (_, v) in zip(keys, combo, strict=True)),
                  tuple(i for i, _ in combo))
            for combo in itertools.product(*lists)]


def count(grid: Mapping[str, Sequence[Any]]) -> int:
    total = 1
    for values in grid.values():
        total *= len(values)
    return total


def with_point(base: str, point: Point | None, limit: int = 63) -> str:
    """``base-<label>``; when that is longer than ``limit``, ``base`` (cut to fit) and 8 hex
    of the point's values instead: never two points with one name."""
    if point is None:
        return base
    readable = f"{base}-{point.label}"
    if len(readable) <= limit:
        return readable
    digest = hashlib.sha256(json.dumps(point.values, sort_keys=True).encode()).hexdigest()[:8]
    return f"{base[: limit - 9].rstrip('-_.')}-{digest}"


def key_path(dotted: str) -> KeyPath:
    return tuple(int(p) if p.isdigit() else p for p in dotted.split("."))


def point_doc(doc: SourceDoc, point: Point) -> SourceDoc:
    """``doc`` with the point's values laid over it and ``sweep`` removed; positions of the
    point's fields are their grid values'. An ``output.uri`` the grid does not set gets the
    point's label as a last folder (points never write over each other)."""
    data = copy.deepcopy(doc.data)
    data.pop("sweep", None)
    key_spans = {p: s for p, s in doc.key_spans.items() if p[:1] != ("sweep",)}
    value_spans = {p: s for p, s in doc.value_spans.items() if p[:1] != ("sweep",)}
    for (dotted, value), i in zip(point.values, point.index, strict=True):
        path = key_path(dotted)
        _assign(data, path, copy.deepcopy(value))
        for spans in (key_spans, value_spans):
            for stale in [p for p in spans if p[: len(path)] == path]:
                del spans[stale]
        grid_key = ("sweep", "grid", dotted)
        if grid_key in doc.key_spans:
            key_spans[path] = doc.key_spans[grid_key]
        value_span = doc.value_spans.get((*grid_key, i)) or doc.key_spans.get(grid_key)
        if value_span is not None:
            value_spans[path] = value_span
    output = data.get("output")
    if (isinstance(output, dict) and isinstance(output.get("uri"), str)
            and "output.uri" not in point.as_dict()):
        output["uri"] = f"{output['uri'].rstrip('/')}/{point.label}"
    return replace(doc, data=data, key_spans=key_spans, value_spans=value_spans)


def _assign(data: Any, path: KeyPath, value: Any) -> None:
    """Set ``path``, making the mappings on the way; a path through a list or a scalar is
    left to the rule that checks grid paths (``rules/sweep.py``): nothing is set."""
    node = data
    for part in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(part, {})
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return
    last = path[-1]
    if isinstance(node, dict):  # noqa: SIM114 (separate for typing)
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node):
        node[last] = value


def _words(paths: list[str]) -> list[str]:
    """A short word per path: its known short form or last part, more parts where two
    paths would read the same."""
    parts = [p.split(".") for p in paths]
    depth = [1] * len(paths)
    while True:
        words = ["-".join(SHORT.get(x, x) for x in p[-d:]) for p, d in zip(parts, depth,
                                                                          strict=True)]
        clash = {w for w in words if words.count(w) > 1}
        grow = [i for i, w in enumerate(words) if w in clash and depth[i] < len(parts[i])]
        if not grow:
            return [_clean(w) for w in words]
        for i in grow:
            depth[i] += 1


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != 0 and (abs(value) < 0.1 or abs(value) >= 1e4):
            mantissa, exp = f"{value:.6e}".split("e")
            text = f"{mantissa.rstrip('0').rstrip('.')}e{int(exp)}"
        else:
            text = f"{value:g}"
        return _clean(("m" + text[1:] if text.startswith("-") else text).replace(".", "p"))
    if isinstance(value, list):
        return _clean("-".join(str(v) for v in value)) or "none"
    return _clean(str(value)) or "x"


def _clean(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]+", "-", text.lower())).strip("-")
