"""Drift: the live object was changed outside ftspec since ftspec last applied it.

Two signals, both from the object itself (the cluster is the state):
- the applied-digest annotation equals the digest of what ftspec would apply now, yet the
  server's dry-run differs from live: someone else edited it;
- the managedFields of another manager (not ``ftspec``, not a status writer) cover a field
  that differs: that manager changed a field ftspec sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ftspec.reconciler.kubernetes.essence import APPLIED_DIGEST_ANNOTATION

FIELD_MANAGER = "ftspec"


def _fields_paths(tree: dict[str, Any], prefix: str = "") -> Iterable[str]:
    for key, sub in tree.items():
        if key == ".":
            continue
        if not key.startswith("f:"):
            # k:{...} / v:... / i:N : a list element; report its list
            if prefix:
                yield prefix
            continue
        path = f"{prefix}.{key[2:]}" if prefix else key[2:]
        if isinstance(sub, dict) and sub:
            yield from _fields_paths(sub, path)
        else:
            yield path


def foreign_managers(live: dict[str, Any]) -> dict[str, list[str]]:
    """manager -> field paths it owns, for every manager other than ftspec (spec, not status)."""
    out: dict[str, list[str]] = {}
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        manager = entry.get("manager", "?")
        if manager == FIELD_MANAGER or entry.get("subresource") == "status":
            continue
        paths = [p for p in _fields_paths(entry.get("fieldsV1") or {})
                 if not p.startswith("status")]
        if paths:
            out.setdefault(manager, []).extend(paths)
    return out


def _norm(path: str) -> str:
    out = []
    for part in path.replace("[", ".[").split("."):
        if part and not part.startswith("["):
            out.append(part.strip('"'))
    return ".".join(out)


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def drift_managers(live: dict[str, Any], changed_paths: Iterable[str]) -> list[str]:
    """Other managers owning any of ``changed_paths``."""
    changed = [_norm(p) for p in changed_paths]
    hits = []
    for manager, paths in foreign_managers(live).items():
        owned = [_norm(p) for p in paths]
        if any(_related(c, o) for c in changed for o in owned
               if o not in ("metadata.labels", "metadata.annotations", "metadata")):
            hits.append(manager)
    return sorted(hits)


def recorded_digest(live: dict[str, Any]) -> str | None:
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(APPLIED_DIGEST_ANNOTATION)
    return value if isinstance(value, str) else None
