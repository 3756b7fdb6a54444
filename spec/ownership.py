"""Ownership marks, in one place: the labels every object ftspec creates carries (Kubernetes
labels, Ray job metadata), and how an object read back is recognised as ftspec's.

An object is ftspec's when ``app.kubernetes.io/managed-by`` is ``ftspec`` and it names the
spec that owns it (``ftspec.dev/spec-id``); plan, delete and ``list`` touch no other object.
"""

from __future__ import annotations

from collections.abc import Mapping

OWNER_LABEL = "app.kubernetes.io/managed-by"
OWNER_VALUE = "ftspec"
SPEC_ID_LABEL = "ftspec.dev/spec-id"
SWEEP_LABEL = "ftspec.dev/sweep"
"""On a sweep point's objects: the spec's identity without the point (``sweep.grid``'s
points of one spec share it), so a point that left the grid is still found as the spec's."""
OWNER_SELECTOR = f"{OWNER_LABEL}={OWNER_VALUE}"
"""The Kubernetes label selector that lists every object ftspec manages."""


def ownership_labels(spec_id: str, sweep: str | None = None) -> dict[str, str]:
    """The marks an object of the spec ``spec_id`` carries; a sweep point's also name the
    sweep (the spec's identity without the point)."""
    labels = {OWNER_LABEL: OWNER_VALUE, SPEC_ID_LABEL: spec_id}
    if sweep is not None:
        labels[SWEEP_LABEL] = sweep
    return labels


def owned_spec_id(labels: Mapping[str, object] | None) -> str | None:
    """The spec id owning an object with these labels (or Ray metadata); None when ftspec
    does not manage it."""
    if not labels or labels.get(OWNER_LABEL) != OWNER_VALUE:
        return None
    value = labels.get(SPEC_ID_LABEL)
    return value if isinstance(value, str) and value else None
