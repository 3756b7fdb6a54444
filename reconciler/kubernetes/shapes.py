"""Objects from the API server in the shapes the rest of the backend reads.

A real API server always sends a listed object with ``metadata.name``, and ``spec`` /
``status`` as mappings; a proxy, a broken aggregated API or a hostile server need not
(``metadata: null`` was an internal error in most commands). Every answer of
``Transport.request`` passes ``shaped``: a LIST keeps the objects that are objects (a mapping
whose ``metadata`` names it, ``listed``); each object has its metadata's text fields, labels
and annotations of their types, ``spec`` and ``status`` as mappings and the lists the backend
walks (containers, their statuses and states, conditions, a TrainJob's ``jobsStatus``)
holding mappings only; one object whose metadata is not a mapping is refused. Anything else
is left as it came: code reading it already allows a missing value, not a value of another
type.
"""

from __future__ import annotations

from typing import Any

from ftspec.reconciler.answers import AnswerRefused

OBJECT_LISTS = ("containers", "initContainers", "containerStatuses", "initContainerStatuses",
                "ephemeralContainerStatuses", "conditions", "jobsStatus")
"""Lists under ``spec`` / ``status`` whose entries are objects."""
TEXT_FIELDS = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp",
               "deletionTimestamp", "generateName")
"""Metadata fields that are text; one of another type is left out."""
STATES = ("state", "lastState")
"""A container status's states: mappings of mappings (``terminated: {exitCode: …}``)."""


def shaped(answer: dict[str, Any], what: str = "the answer") -> dict[str, Any]:
    """An answer of ``Transport.request`` in the shapes the backend reads: a LIST's items
    well formed (the others left out), one object's metadata, ``spec`` and ``status`` of the
    types read; a ``Status`` answer (whose ``status`` is a word) as it came. An object whose
    ``metadata`` is not a mapping is refused (``AnswerRefused``)."""
    if answer.get("kind") == "Status":
        return answer
    if "items" in answer:
        return {**answer, "items": listed(answer)}
    if "metadata" in answer and not isinstance(answer["metadata"], dict):
        raise AnswerRefused(f"{what} is not a Kubernetes object (its metadata is not a "
                            "mapping)", hint="check --kubeconfig / --context (is it the API "
                            "server you meant?)")
    return _object(answer)


def listed(answer: Any) -> list[dict[str, Any]]:
    """The well-formed objects of a LIST answer (any other entry is left out)."""
    items = answer.get("items") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        return []
    return [obj for obj in map(well_formed, items) if obj is not None]


def well_formed(obj: Any) -> dict[str, Any] | None:
    """``obj`` in the shapes the backend reads, or None when it names no object."""
    if not isinstance(obj, dict):
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return None
    return _object(obj)


def _object(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    if isinstance(out.get("metadata"), dict):
        out["metadata"] = _metadata(out["metadata"])
    for part in ("spec", "status"):
        if part in out:
            out[part] = _section(out[part])
    return out


def _metadata(meta: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in meta.items() if k not in TEXT_FIELDS or isinstance(v, str)}
    for key in ("labels", "annotations"):
        if key in out:
            found = out[key] if isinstance(out[key], dict) else {}
            out[key] = {k: v for k, v in found.items() if isinstance(k, str)
                        and isinstance(v, str)}
    for key in ("managedFields", "ownerReferences", "finalizers"):
        if key in out and not isinstance(out[key], list):
            out[key] = []
    if "managedFields" in out:
        out["managedFields"] = [e for e in out["managedFields"] if isinstance(e, dict)]
    return out


def _section(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    out = dict(value)
    for key in OBJECT_LISTS:
        if key in out:
            entries = out[key] if isinstance(out[key], list) else []
            out[key] = [_entry(e) for e in entries if isinstance(e, dict)]
    return out


def _entry(entry: dict[str, Any]) -> dict[str, Any]:
    if not any(key in entry for key in STATES):
        return entry
    out = dict(entry)
    for key in STATES:
        if key in out:
            state = out[key] if isinstance(out[key], dict) else {}
            out[key] = {k: v for k, v in state.items() if isinstance(v, dict)}
    return out
