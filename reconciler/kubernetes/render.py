"""Desired -> the Kubernetes objects to apply: the compiled manifests, decorated."""

from __future__ import annotations

from typing import Any

from ftspec.reconciler.backend import BackendError, Desired
from ftspec.reconciler.kubernetes.resources import JOB_KIND
from ftspec.spec.jsondata import copy_json
from ftspec.spec.platforms import OVERRIDES_TRAINER, PATCHES_TRAINER, TRAINER_GROUP

TRAINJOB_CRD = f"trainjobs.{TRAINER_GROUP}"


def trainer_version_from_crd(crd: dict[str, Any]) -> str:
    """``v2.1`` (podTemplateOverrides) or ``v2.2`` (runtimePatches, v2.2 and later)."""
    for version in (crd.get("spec") or {}).get("versions") or []:
        props = (((version.get("schema") or {}).get("openAPIV3Schema") or {})
                 .get("properties", {}).get("spec", {}).get("properties", {}))
        if "runtimePatches" in props:
            return PATCHES_TRAINER
        if "podTemplateOverrides" in props:
            return OVERRIDES_TRAINER
    return PATCHES_TRAINER


def _manifests(desired: Desired) -> list[dict[str, Any]]:
    """The compiled manifests (already rendered for the cluster's Trainer API: see
    ``KubernetesBackend.compile_options``), copied so decorating them changes no artifact."""
    objs = [copy_json(dict(a.obj)) for a in desired.artifacts
            if a.kind == "manifest" and a.obj is not None]
    if not objs:
        raise BackendError(f"{desired.spec_file}: target {desired.job.target!r} produced no "
                           "Kubernetes objects to apply")
    return objs


def render(desired: Desired) -> list[dict[str, Any]]:
    """The objects with ownership labels, namespace and, on the job object, the applied
    record annotation (``ftspec.reconciler.applied``: version, spec as written, defaults,
    ML summary; ignored when comparing)."""
    from ftspec.reconciler.applied import RECORD_KEY, encode, record_of

    job = desired.job
    out = []
    for obj in _manifests(desired):
        meta = obj.setdefault("metadata", {})
        if obj.get("kind") not in ("ClusterTrainingRuntime",):
            meta.setdefault("namespace", job.namespace)
        labels = meta.setdefault("labels", {})
        labels.update(job.labels)
        annotations = meta.setdefault("annotations", {})
        for key, value in job.annotations.items():
            annotations.setdefault(key, value)
        if obj.get("kind") == JOB_KIND.get(job.target):
            annotations[RECORD_KEY] = encode(record_of(job, desired.inputs))
        out.append(obj)
    return out
