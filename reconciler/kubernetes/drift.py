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

from ftspec.reconciler.kubernetes.essence import APPLIED_DIGEST_ANNOTATION, applied_digest

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


IDENTITY_FIELDS = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}
"""What an applied object names but no manager owns (managedFields never list them)."""
DIGEST_FIELDS = {("metadata",), ("metadata", "annotations"),
                 ("metadata", "annotations", APPLIED_DIGEST_ANNOTATION)}
"""What apply adds to the desired object (``essence.with_applied_digest``)."""


def unchanged_since_applied(live: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Whether applying ``desired`` would leave ``live`` exactly as it is, known from the
    object alone:

    - ftspec last applied this very object (the recorded digest is its digest);
    - ftspec is the only manager of its fields, and its one Apply entry owns exactly the
      fields that apply sends (so a re-apply removes nothing and takes over nothing);
    - every value ``desired`` sets is still the live value.

    Then the server's dry-run of the apply would return ``live`` unchanged, and the plan
    need not ask for it. Anything else (another manager, a field someone removed or set
    under ftspec's name, a value changed) is for the dry-run to tell."""
    if recorded_digest(live) != applied_digest(desired):
        return False
    entries = [e for e in (live.get("metadata") or {}).get("managedFields") or []
               if e.get("subresource") != "status"]
    if len(entries) != 1 or entries[0].get("manager") != FIELD_MANAGER \
            or entries[0].get("operation") != "Apply":
        return False
    sent = set(_set_paths(desired)) - IDENTITY_FIELDS | DIGEST_FIELDS
    if set(_owned_paths(entries[0].get("fieldsV1") or {})) != sent:
        return False
    return _holds(desired, live)


def _owned_paths(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterable[tuple[str, ...]]:
    """Mapping fields of a managedFields tree; a list is one field (its items not entered)."""
    for key, sub in tree.items():
        if key.startswith("f:"):
            path = (*prefix, key[2:])
            yield path
            if isinstance(sub, dict):
                yield from _owned_paths(sub, path)


def _set_paths(obj: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterable[tuple[str, ...]]:
    """The same for an object: every mapping key, lists not entered."""
    for key, value in obj.items():
        path = (*prefix, key)
        yield path
        if isinstance(value, dict):
            yield from _set_paths(value, path)


def _holds(want: Any, have: Any) -> bool:
    """``have`` has every value of ``want`` (mappings may hold more, server defaults; lists
    item by item; scalars equal and of the same JSON type)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            key in have and _holds(value, have[key]) for key, value in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(
            _holds(w, h) for w, h in zip(want, have))
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have
    return type(want) is type(have) and bool(want == have)
