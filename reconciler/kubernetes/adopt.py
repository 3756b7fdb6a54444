"""``ftspec import trainjob --live NAMESPACE/NAME``: read a live TrainJob, write the spec that
describes it, and adopt the object so that ``ftspec plan`` on that spec is a no-op.

Reading: one GET of the TrainJob and one of its CRD (the Trainer API generation the cluster
serves, as ``plan`` detects it), then ``import trainjob`` over the object (server-written
fields dropped) with the trainer's args kept as they are: the trainer is immutable, so a
rewritten list would replace the TrainJob.

Adoption: the planner touches only objects carrying ftspec's ownership labels, and compares
ftspec's bookkeeping annotations (spec digest, ML summary). Both live in ``metadata``, which
is mutable: one JSON merge patch of the labels and annotations the written spec renders, and
nothing else, makes the object ftspec's without a replace. The patch is sent only when the
server's dry run of the full desired object (server-side apply, field manager ``ftspec``)
differs from the live object in those metadata keys alone; otherwise nothing is written and
the differences are reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes.backend import KubernetesBackend
from ftspec.reconciler.kubernetes.resources import resource_of
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ownership import OWNER_LABEL, SPEC_ID_LABEL

_SERVER = ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp",
           "selfLink")


@dataclass
class Adoption:
    text: str
    warnings: tuple[Diagnostic, ...]
    adopted: bool = False
    differences: list[str] = field(default_factory=list)
    """Paths where the desired object differs from live beyond ftspec's metadata."""


def parse_ref(ref: str) -> tuple[str, str]:
    ns, sep, name = ref.partition("/")
    if not sep or not ns or not name or "/" in name:
        raise BackendError(f"--live takes NAMESPACE/NAME, got {ref!r}")
    return ns, name


def read_live(backend: KubernetesBackend, ref: str, accelerator: str) -> Adoption:
    """The spec text of the live TrainJob (nothing is written to the cluster)."""
    from ftspec.compiler.importers.trainjob import import_trainjob_doc
    from ftspec.compiler.importers.trainjob_source import check_is_trainjob
    from ftspec.reconciler.kubernetes.reads import Reader
    from ftspec.reconciler.kubernetes.render import TRAINJOB_CRD, trainer_version_from_crd
    from ftspec.spec.loader import parse_yaml
    from ftspec.targets.render import to_yaml

    ns, name = parse_ref(ref)
    t = backend.transport
    live = t.request("GET", resource_of("TrainJob").path(ns, name), verb="get",
                     what=f"trainjob {ns}/{name}", ok_404=True)
    if live is None:
        raise BackendError(f"no TrainJob {ns}/{name} on {t.conn.server}")
    reader = Reader(t)
    try:
        crd = reader.crd(TRAINJOB_CRD)
    finally:
        reader.close()
    version = trainer_version_from_crd(crd) if crd and not crd.get("missing") else None
    live.pop("status", None)
    meta = live.get("metadata") or {}
    for key in _SERVER:
        meta.pop(key, None)
    doc = parse_yaml(to_yaml(live), f"trainjob/{ns}/{name}")
    check_is_trainjob(doc)
    imported = import_trainjob_doc(doc, accelerator=accelerator, version=version, live=True,
                                   what=f"the live TrainJob {ns}/{name} ({t.conn.server})")
    return Adoption(imported.text, imported.warnings)


def adopt(backend: KubernetesBackend, spec: Path) -> list[str]:
    """Make the live TrainJob of ``spec`` ftspec's; returns the differences that stopped it
    (empty: adopted, or already ftspec's with nothing to change)."""
    from ftspec.compiler.pipeline import SpecInput
    from ftspec.reconciler.backends import BackendOptions
    from ftspec.reconciler.desired import prepare
    from ftspec.reconciler.fielddiff import field_changes
    from ftspec.reconciler.kubernetes.essence import essence
    from ftspec.reconciler.kubernetes.render import render

    prepared = prepare([SpecInput(spec)], BackendOptions(backend.options.kubeconfig,
                                                         backend.options.context),
                       preflight=False)  # the live job runs already: nothing is created
    if not prepared.ok or not prepared.desired:
        return [d.format() for d in prepared.diagnostics if d.is_error]
    obj = next(o for o in render(prepared.desired[0]) if o.get("kind") == "TrainJob")
    t = backend.transport
    path = resource_of("TrainJob").path(obj["metadata"]["namespace"], obj["metadata"]["name"])
    live = t.request("GET", path, verb="get", what="trainjob")
    dry = t.request("PATCH", path, obj, query={"dryRun": "All", "fieldManager": "ftspec",
                                               "force": "false"},
                    content_type="application/apply-patch+yaml", verb="patch", what="trainjob")
    assert live is not None and dry is not None
    ours = _bookkeeping(obj)
    before, after = essence(live), essence(dry)
    for side in (before, after):
        meta = side.get("metadata", {})
        for part in ("labels", "annotations"):
            kept = {k: v for k, v in (meta.get(part) or {}).items() if k not in ours[part]}
            meta.pop(part, None)
            if kept:
                meta[part] = kept
    left = [f.path for f in field_changes(before, after, lambda _: False)]
    if left:
        return left
    t.request("PATCH", path, {"metadata": ours}, content_type="application/merge-patch+json",
              verb="patch", what="trainjob")
    return []


def _bookkeeping(obj: dict[str, Any]) -> dict[str, dict[str, str]]:
    """ftspec's labels and annotations on the rendered object (the user's are already
    live: the spec was read from there)."""
    meta = obj["metadata"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items()
              if k in (OWNER_LABEL, SPEC_ID_LABEL)}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k.startswith("ftspec.dev/")}
    return {"labels": labels, "annotations": annotations}
