"""The essence of a Kubernetes object: what a user (or ftspec) sets, without server noise.

Both sides of a diff go through ``essence`` (kopf's "diffbase", kubectl's dry-run diff):
status, server-filled metadata and bookkeeping annotations are dropped. Server-defaulted spec
fields need no list: the planner compares the server's dry-run result of applying the desired
object with the live object, so defaults appear on both sides.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ftspec.compiler.summary import SUMMARY_ANNOTATION
from ftspec.reconciler.applied import RECORD_KEY
from ftspec.spec.ir import SPEC_HASH_ANNOTATION
from ftspec.spec.jsondata import copy_json

SERVER_METADATA = (
    "managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink",
    "deletionTimestamp", "deletionGracePeriodSeconds",
)
APPLIED_DIGEST_ANNOTATION = "ftspec.dev/applied-digest"
"""Digest of the object ftspec last applied (its own value excluded): drift detection."""
LEGACY_ANNOTATIONS = (SPEC_HASH_ANNOTATION, SUMMARY_ANNOTATION)
"""What an older ftspec wrote in place of the applied record (a spec hash that moved with
every new default, the ML summary): ignored, so its objects compare by what they run."""
IGNORED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration", APPLIED_DIGEST_ANNOTATION,
                       RECORD_KEY, *LEGACY_ANNOTATIONS)
"""Bookkeeping: ftspec's applied record explains a change, it never is one."""


def essence(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``obj`` without status, server metadata and bookkeeping annotations
    (dropped before copying: ``managedFields`` is most of a live object)."""
    out = {key: value for key, value in obj.items() if key != "status"}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta = out["metadata"] = {key: value for key, value in meta.items()
                                  if key not in SERVER_METADATA}
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations = {key: value for key, value in annotations.items()
                           if key not in IGNORED_ANNOTATIONS}
            if annotations:
                meta["annotations"] = annotations
            else:
                meta.pop("annotations", None)
        if not meta.get("labels"):
            meta.pop("labels", None)
    return copy_json(out)


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_digest(obj: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical(obj).encode()).hexdigest()[:32]


def applied_digest(desired: dict[str, Any]) -> str:
    """Digest of a desired object, ignoring the digest annotation itself."""
    ess = essence(desired)
    annotations = (ess.get("metadata") or {}).get("annotations") or {}
    annotations.pop(APPLIED_DIGEST_ANNOTATION, None)
    return content_digest(ess)


def with_applied_digest(desired: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``desired`` carrying its own applied digest annotation."""
    out = copy_json(desired)
    meta = out.setdefault("metadata", {})
    meta.setdefault("annotations", {})[APPLIED_DIGEST_ANNOTATION] = applied_digest(out)
    return out
