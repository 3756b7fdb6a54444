"""JSON merge patches (RFC 7386) for ``overrides.trainjob`` and ``overrides.rayjob``.

The algorithm is the RFC's ten lines; the one PyPI package for it is little used and
unmaintained, so ftspec keeps its own here rather than add a dependency. ``check_patch``
refuses patches that would change what identifies the object (apiVersion, kind, name,
namespace, ownership labels): the reconciler finds its objects by them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.jsondata import copy_json
from ftspec.spec.ownership import OWNER_LABEL, SPEC_ID_LABEL, SWEEP_LABEL

IDENTITY: tuple[tuple[str, ...], ...] = (
    ("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"),
    ("metadata", "labels", OWNER_LABEL), ("metadata", "labels", SPEC_ID_LABEL),
    ("metadata", "labels", SWEEP_LABEL),
)


def merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` applied (RFC 7386): mappings merge key by key, ``null``
    removes a key, anything else (lists included) replaces. Neither input is modified."""
    if not isinstance(patch, Mapping):
        return copy_json(patch)
    out: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def check_patch(patch: Mapping[str, Any], field: str, kind: str, code: str
                ) -> Iterator[Diagnostic]:
    """Errors for a patch under ``overrides.<field>`` that touches the object's identity."""
    error = Findings(code).error
    for path in IDENTITY:
        node: Any = patch
        for key in path:
            if not isinstance(node, Mapping) or key not in node:
                break
            node = node[key]
        else:
            yield error(("overrides", field, *path),
                        f"overrides.{field} may not change the {kind}'s "
                        f"{'.'.join(path)}: ftspec identifies its objects by it",
                        "patch-identity", hint="set it through the spec (metadata.name, "
                        "metadata.namespace) instead")


def merge_diff(before: Any, after: Any) -> Any:
    """The merge patch that turns ``before`` into ``after`` (``merge_patch(before,
    merge_diff(before, after)) == after``): changed keys, ``None`` for removed ones, lists
    whole. ``after`` must hold no ``None`` values (a merge patch cannot set one)."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return copy_json(after)
    out: dict[str, Any] = {}
    for key, value in after.items():
        if key not in before:
            out[key] = copy_json(value)
        elif before[key] != value or type(before[key]) is not type(value):
            out[key] = merge_diff(before[key], value)
    for key in before:
        if key not in after:
            out[key] = None
    return out
