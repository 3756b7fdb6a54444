"""Kinds ftspec reads or writes, and their REST paths (no discovery round trip needed).

Every request path is built here (``Resource.path``), and every namespace and name that goes
into one is checked first: a namespace must be a DNS-1123 label, a name a DNS-1123
subdomain (the forms the API server itself requires), and both are percent-encoded as path
segments. A name read from a plan or a live object such as ``victim?dryRun=All#`` is
refused instead of turning into a request for another object with a query of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ftspec.reconciler.backend import BackendError
from ftspec.spec.patterns import DNS_LABEL, DNS_SUBDOMAIN
from ftspec.spec.platforms import PLATFORMS, TRAINER_API_VERSION, TRAINER_GROUP

_LABEL = re.compile(DNS_LABEL)
_SUBDOMAIN = re.compile(DNS_SUBDOMAIN)


def path_segment(value: object, what: str, *, label: bool) -> str:
    """``value`` as one path segment: a DNS-1123 label (``label``, at most 63 characters)
    or subdomain (at most 253), percent-encoded; ``BackendError`` for anything else."""
    form, limit = (_LABEL, 63) if label else (_SUBDOMAIN, 253)
    if not isinstance(value, str) or len(value) > limit or not form.fullmatch(value):
        kind = "label" if label else "subdomain"
        chars = " and '-'" if label else ", '-' and '.'"
        raise BackendError(f"{what} {value!r} is not a valid Kubernetes name (a DNS-1123 "
                           f"{kind} of at most {limit} characters: lowercase letters, digits"
                           f"{chars}); no request was made")
    return quote(value, safe="")


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
            base += "/namespaces/" + path_segment(namespace, "namespace", label=True)
        base += f"/{self.plural}"
        if not name:
            return base
        return f"{base}/" + path_segment(name, f"{self.plural} name",
                                         label=self.plural == "namespaces")


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
    "JobSet": Resource("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    "Job": Resource("batch", "v1", "jobs"),
    "RayCluster": Resource("ray.io", "v1", "rayclusters"),
    "Event": Resource("", "v1", "events"),
}

MANAGED_KINDS: dict[str, tuple[str, ...]] = {
    p.target: p.kinds for p in PLATFORMS.values() if p.kubernetes}
"""deploy.target -> kinds ftspec may create for it (listed by label to find orphans): the
platform rows' ``kinds``."""

JOB_KIND: dict[str, str] = {
    p.target: p.job_kind for p in PLATFORMS.values() if p.job_kind is not None}
"""deploy.target -> the kind that carries the job."""


def runtime_needed(obj: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the runtime a TrainJob references (None: not a TrainJob, or none):
    the object apply creates first and the Trainer's webhook needs to exist."""
    ref = (obj.get("spec") or {}).get("runtimeRef") or {}
    if obj.get("kind") != "TrainJob" or not ref.get("name"):
        return None
    return str(ref.get("kind") or "ClusterTrainingRuntime"), str(ref["name"])


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
