"""Kinds ftspec reads or writes, and their REST paths (no discovery round trip needed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.spec.platforms import TRAINER_API_VERSION, TRAINER_GROUP


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


KINDS: dict[str, Resource] = {
    "TrainJob": Resource(TRAINER_GROUP, TRAINER_API_VERSION, "trainjobs"),
    "TrainingRuntime": Resource(TRAINER_GROUP, TRAINER_API_VERSION, "trainingruntimes"),
    "ClusterTrainingRuntime": Resource(TRAINER_GROUP, TRAINER_API_VERSION,
                                       "clustertrainingruntimes", namespaced=False),
    "RayJob": Resource("ray.io", "v1", "rayjobs"),
    "ConfigMap": Resource("", "v1", "configmaps"),
    "Secret": Resource("", "v1", "secrets"),
    "PersistentVolumeClaim": Resource("", "v1", "persistentvolumeclaims"),
    "Namespace": Resource("", "v1", "namespaces", namespaced=False),
    "Pod": Resource("", "v1", "pods"),
    "Lease": Resource("coordination.k8s.io", "v1", "leases"),
    "CustomResourceDefinition": Resource("apiextensions.k8s.io", "v1",
                                         "customresourcedefinitions", namespaced=False),
}

MANAGED_KINDS: dict[str, tuple[str, ...]] = {
    "kubeflow": ("TrainJob", "TrainingRuntime", "ConfigMap"),
    "kuberay": ("RayJob", "ConfigMap"),
}
"""deploy.target -> kinds ftspec may create for it (listed by label to find orphans)."""

JOB_KIND: dict[str, str] = {"kubeflow": "TrainJob", "kuberay": "RayJob"}


def resource_of(kind: str) -> Resource:
    try:
        return KINDS[kind]
    except KeyError:
        raise BackendError(f"ftspec does not know how to manage kind {kind!r}") from None


def object_path(obj: dict[str, Any], *, with_name: bool = True) -> str:
    meta = obj.get("metadata") or {}
    res = resource_of(str(obj.get("kind")))
    return res.path(meta.get("namespace"), meta.get("name") if with_name else None)


def describe(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name')}"
