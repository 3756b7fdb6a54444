"""Desired -> the Kubernetes objects to apply, for the Trainer API the cluster serves."""

from __future__ import annotations

import copy
import json
from typing import Any

from ftspec.reconciler.backend import BackendError, Desired
from ftspec.reconciler.kubernetes.resources import JOB_KIND

TRAINJOB_CRD = "trainjobs.trainer.kubeflow.org"


def trainer_version_from_crd(crd: dict[str, Any]) -> str:
    """``v2.1`` (podTemplateOverrides) or ``v2.2`` (runtimePatches, v2.2 and later)."""
    for version in (crd.get("spec") or {}).get("versions") or []:
        props = (((version.get("schema") or {}).get("openAPIV3Schema") or {})
                 .get("properties", {}).get("spec", {}).get("properties", {}))
        if "runtimePatches" in props:
            return "v2.2"
        if "podTemplateOverrides" in props:
            return "v2.1"
    return "v2.2"


def _manifests(desired: Desired, trainer_version: str | None) -> list[dict[str, Any]]:
    job = desired.job
    if job.target == "kubeflow" and trainer_version is not None:
        try:
            from ftspec.targets.kubeflow import manifests_for_version
        except ImportError:
            manifests_for_version = None  # type: ignore[assignment]
        if manifests_for_version is not None:
            # objects only: the YAML text of `ftspec compile` is not needed here
            return [copy.deepcopy(obj) for _path, obj in manifests_for_version(job, trainer_version)]
    artifacts = desired.artifacts
    if not artifacts and job.target in JOB_KIND:
        from ftspec.compiler.dispatch import compile_job

        artifacts = tuple(compile_job(job, job.target))
    objs = [copy.deepcopy(dict(a.obj)) for a in artifacts
            if a.kind == "manifest" and a.obj is not None]
    if not objs:
        raise BackendError(f"{desired.spec_file}: target {job.target!r} produced no Kubernetes "
                           "objects to apply")
    return objs


def render(desired: Desired, trainer_version: str | None) -> list[dict[str, Any]]:
    """The objects with ownership labels, namespace and the ML summary annotation."""
    from ftspec.compiler.summary import SUMMARY_ANNOTATION, ml_summary

    job = desired.job
    out = []
    for obj in _manifests(desired, trainer_version):
        meta = obj.setdefault("metadata", {})
        if obj.get("kind") not in ("ClusterTrainingRuntime",):
            meta.setdefault("namespace", job.namespace)
        labels = meta.setdefault("labels", {})
        labels.update(job.labels)
        annotations = meta.setdefault("annotations", {})
        for key, value in job.annotations.items():
            annotations.setdefault(key, value)
        if obj.get("kind") == JOB_KIND.get(job.target):
            annotations[SUMMARY_ANNOTATION] = json.dumps(ml_summary(job), sort_keys=False)
        out.append(obj)
    return out
