"""What a TrainJob leaves implicit, and the keys where ftspec's TrainJob must differ.

``CRD_DEFAULTS`` are the ``default:`` values of the TrainJob CRD's schema, read from the
Kubeflow Trainer CRDs of v2.1.0, v2.3.0 and master after v2.3.0 (identical in all three;
``TRAINER_API`` names the newest generation of ``TRAINER_VERSIONS`` they were read for).
The API server fills them in, so a file that leaves them out and the object ftspec
compiles mean the same TrainJob.

``MUST_DIFFER`` is the one list of keys where an imported TrainJob and the one its spec
compiles to differ on purpose: ftspec's ownership labels and bookkeeping annotations, and
a namespace the file leaves to ``kubectl``. ``comparable`` drops them and fills the
defaults, for the importer's residue and for the round-trip tests alike.
"""

from __future__ import annotations

import copy
from typing import Any

from ftspec.compiler.summary import SUMMARY_ANNOTATION
from ftspec.spec.ir import SPEC_HASH_ANNOTATION
from ftspec.spec.ownership import OWNER_LABEL, SPEC_ID_LABEL, SWEEP_LABEL
from ftspec.spec.platforms import NEWEST_TRAINER

TRAINER_API = NEWEST_TRAINER
TOOL = f"Kubeflow Trainer {TRAINER_API} TrainJob CRD"

CRD_DEFAULTS: dict[tuple[str, ...], Any] = {
    ("spec", "runtimeRef", "apiGroup"): "trainer.kubeflow.org",
    ("spec", "runtimeRef", "kind"): "ClusterTrainingRuntime",
    ("spec", "suspend"): False,
    ("spec", "managedBy"): "trainer.kubeflow.org/trainjob-controller",
}

MUST_DIFFER: dict[tuple[str, ...], str] = {
    ("metadata", "labels", OWNER_LABEL): "ftspec's ownership label",
    ("metadata", "labels", SPEC_ID_LABEL): "the spec's identity label",
    ("metadata", "labels", SWEEP_LABEL): "the sweep a point's object belongs to",
    ("metadata", "annotations", SPEC_HASH_ANNOTATION): "digest of the spec",
    ("metadata", "annotations", SUMMARY_ANNOTATION): "the ML summary plan reads",
    ("metadata", "annotations", "ftspec.dev/applied-digest"): "what ftspec last applied",
    ("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"):
        "kubectl's own bookkeeping",
}
SERVER_WRITTEN = ("status", "managedFields", "resourceVersion", "uid", "generation",
                  "creationTimestamp", "selfLink", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "finalizers", "ownerReferences")
"""Written by the server, never by a user or by ftspec: not imported, not compared."""


def comparable(obj: dict[str, Any], *, namespace: bool = True) -> dict[str, Any]:
    """``obj`` with the CRD defaults filled, server-written and ``MUST_DIFFER`` keys
    dropped; ``namespace=False`` also drops metadata.namespace (a file may leave it out)."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.setdefault("metadata", {})
    for key in SERVER_WRITTEN:
        meta.pop(key, None)
    if not namespace:
        meta.pop("namespace", None)
    for path in MUST_DIFFER:
        parent = meta.get(path[1])
        if isinstance(parent, dict):
            parent.pop(path[2], None)
            if not parent:
                meta.pop(path[1])
    for path, value in CRD_DEFAULTS.items():
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.setdefault(path[-1], value)
    return out
