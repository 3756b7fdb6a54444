"""Overrides on top of a spec file: ``-f overlay.yaml`` (deep merge) and ``--set a.b=v``.

Both produce a new :class:`SourceDoc` whose source map points overridden keys at the
overlay's line:col or at the flag (``--set[2]:1:COL``), so errors name the real culprit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity, Span, SpecError
from ftspec.spec.loader import SourceDoc, parse_yaml
from ftspec.spec.secrets import find_secret

_INDEX_LIMIT = 1000


def apply_overlay(base: SourceDoc, overlay: SourceDoc) -> SourceDoc:
    """Merge ``overlay`` over ``base``: mappings merge key by key, anything else replaces."""
    key_spans = dict(base.key_spans)
    value_spans = dict(base.value_spans)
    data = _merge(base.data, overlay.data, (), overlay, key_spans, value_spans)
    return replace(base, data=data, key_spans=key_spans, value_spans=value_spans)


def _merge(base: Any, over: Any, path: KeyPath, overlay: SourceDoc,
           key_spans: dict[KeyPath, Span], value_spans: dict[KeyPath, Span]) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            child = path + (key,)
            out[key] = _merge(base.get(key), value, child, overlay, key_spans, value_spans)
        return out
    # Replaced wholesale: every position at or below ``path`` now comes from the overlay.
    for spans, source in ((key_spans, overlay.key_spans), (value_spans, overlay.value_spans)):
        for stale in [p for p in spans if p[: len(path)] == path and p != ()]:
            del spans[stale]
        spans.update({p: s for p, s in source.items() if p[: len(path)] == path and p != ()})
    return over


MAX_SET_DEPTH = 32
"""Deeper than any spec field; a longer path is a mistake (or an attack on recursion)."""


def parse_set(expr: str, index: int) -> tuple[KeyPath, Any, Span]:
    """``training.learning_rate=1e-4`` -> path, YAML-scalar value, pseudo-span of the flag."""
    file = f"--set[{index}]"
    key, sep, raw = expr.partition("=")
    what = find_secret(key) or (find_secret(expr) if not sep else None)
    if what is not None:  # a key path split at its dots would hide it from the spec's scan
        raise SpecError([Diagnostic(
            Severity.ERROR, f"this --set looks like it holds {what}; credentials may not "
            "appear in a spec (text hidden)", span=Span(file, 1, 1), code="override.secret")])
    if any("\ud800" <= ch <= "\udfff" for ch in expr):
        # bytes that are not UTF-8 reach argv as lone surrogates (surrogateescape)
        raise SpecError([Diagnostic(
            Severity.ERROR, "this --set is not valid UTF-8 text", span=Span(file, 1, 1),
            code="override.encoding", hint="pass the value as UTF-8")])
    if not sep or not key.strip():
        raise SpecError([Diagnostic(
            Severity.ERROR, f"expected KEY.PATH=VALUE, got {_shown(expr)}", span=Span(file, 1, 1),
            code="override.syntax",
        )])
    parts = key.strip().split(".")
    if len(parts) > MAX_SET_DEPTH:
        raise SpecError([Diagnostic(
            Severity.ERROR, f"the key path has {len(parts)} parts; spec paths are at most "
            f"{MAX_SET_DEPTH} deep", span=Span(file, 1, 1), code="override.syntax")])
    path: list[str | int] = []
    for part in parts:
        if not part:
            raise SpecError([Diagnostic(
                Severity.ERROR, f'empty key in "{key}"', span=Span(file, 1, 1),
                code="override.syntax",
            )])
        path.append(int(part) if part.isdigit() and int(part) < _INDEX_LIMIT else part)
    value_col = len(key) + 2
    try:
        parsed = parse_yaml(f"v: {raw}" if raw.strip() else "v: ''", file).data["v"]
    except SpecError:
        parsed = raw  # not a valid YAML scalar: take the text as a string
    return tuple(path), parsed, Span(file, 1, value_col)


def apply_sets(base: SourceDoc, exprs: list[str]) -> SourceDoc:
    key_spans = dict(base.key_spans)
    value_spans = dict(base.value_spans)
    data = _copy(base.data)
    for index, expr in enumerate(exprs):
        path, value, span = parse_set(expr, index)
        _assign(data, path, value, span)
        for spans in (key_spans, value_spans):
            for stale in [p for p in spans if p[: len(path)] == path]:
                del spans[stale]
        key_spans[path] = Span(span.file, 1, 1)
        value_spans[path] = span
    return replace(base, data=data, key_spans=key_spans, value_spans=value_spans)


def _copy(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _copy(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_copy(v) for v in node]
    return node


def _assign(data: Any, path: KeyPath, value: Any, span: Span) -> None:
    node = data
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        where = ".".join(str(p) for p in path[: depth + 1])
        if isinstance(part, int):
            if not isinstance(node, list):
                raise _bad(span, f"{where}: cannot index a {type(node).__name__} by number")
            if part > len(node):
                raise _bad(span, f"{where}: index {part} is past the end (list has "
                                 f"{len(node)} items)")
            if part == len(node):
                node.append({} if not last else value)
            elif last:
                node[part] = value
            node = node[part]
            continue
        if not isinstance(node, dict):
            raise _bad(span, f"{where}: cannot set a key inside a {type(node).__name__}")
        if last:
            node[part] = value
        else:
            current = node.get(part)
            if current is not None and not isinstance(current, (dict, list)):
                raise _bad(span, f"{where} is a {_kind(current)}; it has no keys to set")
            if current is None:
                node[part] = {}
            node = node[part]


def _shown(text: str) -> str:
    """Quoted when short; a long argument is described, never cut (a prefix can leak)."""
    return f'"{text}"' if len(text) <= 40 else f"an argument of {len(text)} characters"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string"


def _bad(span: Span, summary: str) -> SpecError:
    """A KEY.PATH that does not fit the document: point at the start of the flag."""
    return SpecError([Diagnostic(Severity.ERROR, summary, span=Span(span.file, 1, 1),
                                 code="override.path")])
