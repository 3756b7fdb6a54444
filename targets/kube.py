"""Kubernetes pieces the kubeflow and kuberay targets share: metadata, resources, placement.

Everything here is a pure function of the ``Job``; the objects are plain dicts in the
field order Kubernetes documents them.
"""

from __future__ import annotations

import re
from typing import Any

from ftspec.spec.catalog.accelerators import NODE_LABEL, accelerator_of
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity, format_path
from ftspec.spec.ir import Job
from ftspec.spec.platforms import on_kubernetes
from ftspec.spec.urls import pvc_parts, scheme

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
GPU_RESOURCE = "nvidia.com/gpu"
SECRET_ENV_NAMES = {"hf_token": "HF_TOKEN", "wandb_api_key": "WANDB_API_KEY"}
"""Environment variable a well-known secret is exposed as; others: the key upper-cased."""
WANDB_ENV = SECRET_ENV_NAMES["wandb_api_key"]


def labels(job: Job) -> dict[str, str]:
    """Ownership labels plus metadata.labels and the Kueue queue / priority labels."""
    out = dict(sorted(job.labels.items()))
    sched = job.spec.deploy.scheduling
    if sched.queue:
        out[KUEUE_QUEUE_LABEL] = sched.queue
    if sched.priority_class:
        out[KUEUE_PRIORITY_LABEL] = sched.priority_class
    return out


def object_meta(job: Job, name: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name or job.name,
        "namespace": job.namespace,
        "labels": labels(job),
    }
    if job.annotations:
        meta["annotations"] = dict(sorted(job.annotations.items()))
    return meta


def resources_per_node(job: Job) -> dict[str, Any]:
    """``requests`` = ``limits``: cpu and memory from ``resources``, GPUs as nvidia.com/gpu."""
    r = job.spec.resources
    amounts: dict[str, Any] = {}
    if r.cpu:
        amounts["cpu"] = r.cpu
    if r.memory:
        amounts["memory"] = r.memory
    if job.gpus_per_node > 0:
        amounts[GPU_RESOURCE] = job.gpus_per_node
    if not amounts:
        return {}
    return {"requests": dict(amounts), "limits": dict(amounts)}


def accelerator_selector(job: Job) -> dict[str, str]:
    """``nvidia.com/gpu.product: <label>`` for a GPU job naming a catalog accelerator."""
    acc = accelerator_of(job.spec.resources.accelerator)
    if acc is None or job.gpus_per_node == 0:
        return {}
    return {NODE_LABEL: acc.product_label}


def pod_placement(job: Job, *, gpu: bool = False) -> dict[str, Any]:
    """Pod-spec fields from ``deploy.scheduling``: node selector, tolerations, pull secrets,
    service account (only the ones set). ``gpu``: the pod trains on GPUs, so its node selector
    also names the accelerator's node label (``deploy.scheduling.node_selector`` wins on the
    same key)."""
    sched = job.spec.deploy.scheduling
    out: dict[str, Any] = {}
    selector = {**(accelerator_selector(job) if gpu else {}), **sched.node_selector}
    if selector:
        out["nodeSelector"] = dict(sorted(selector.items()))
    if sched.tolerations:
        out["tolerations"] = [
            {k: v for k, v in t.model_dump().items() if v is not None}
            for t in sched.tolerations
        ]
    if sched.image_pull_secrets:
        out["imagePullSecrets"] = [{"name": s} for s in sched.image_pull_secrets]
    if sched.service_account:
        out["serviceAccountName"] = sched.service_account
    return out


def secret_env_name(key: str) -> str:
    return SECRET_ENV_NAMES.get(key, re.sub(r"[^A-Za-z0-9_]", "_", key).upper())


def secret_env(job: Job) -> list[dict[str, Any]]:
    """Container env for every ``secrets`` entry given as a Secret reference (never a value)."""
    out = []
    for key, ref in sorted(job.spec.secrets.items()):
        if ref.secretRef is None:
            continue
        out.append({
            "name": secret_env_name(key),
            "valueFrom": {"secretKeyRef": {"name": ref.secretRef.name, "key": ref.secretRef.key}},
        })
    return out


def wandb_key(job: Job) -> str | None:
    """The ``secrets`` entry that becomes ``WANDB_API_KEY`` (None when there is none)."""
    for key in sorted(job.spec.secrets):
        if secret_env_name(key) == WANDB_ENV:
            return key
    return None


def wandb_env(job: Job) -> list[dict[str, Any]]:
    """The W&B key's env entry when ``report_to`` lists wandb (torchtune on Kubeflow gets
    no other secret: the initializers fetch the model)."""
    if "wandb" not in job.spec.training.logging.report_to:
        return []
    return [e for e in secret_env(job) if e["name"] == WANDB_ENV]


def wandb_needs_key(job: Job, target: str) -> list[Diagnostic]:
    """``report_to: [wandb]`` on a cluster: W&B refuses to log without an API key and the job
    runs unattended, so the key must be one of ``secrets`` (it reaches the trainer as
    ``WANDB_API_KEY``)."""
    sinks = job.spec.training.logging.report_to
    if "wandb" not in sinks or wandb_key(job) is not None:
        return []
    how = "{secretRef: {name: SECRET, key: KEY}}" if on_kubernetes(target) else "{env: VAR}"
    return [Diagnostic(
        Severity.ERROR, f"report_to lists wandb but the {target} target has no W&B API key "
        "to give the trainer (W&B cannot log in unattended)",
        path=("training", "logging", "report_to", sinks.index("wandb")),
        hint=f"add secrets: {{wandb_api_key: {how}}}", code=f"{target}.wandb-key")]


def plain_env(values: dict[str, str] | Any) -> list[dict[str, Any]]:
    return [{"name": k, "value": str(v)} for k, v in sorted(dict(values).items())]


def secrets_need_refs(job: Job, target: str) -> list[Diagnostic]:
    """On Kubernetes a secret must be a Secret reference: ``env:`` names a variable of the
    machine running ftspec, which the cluster does not have."""
    found = []
    for key, ref in sorted(job.spec.secrets.items()):
        if ref.secretRef is None:
            found.append(Diagnostic(
                Severity.ERROR,
                f"the {target} target runs in Kubernetes and needs the secret as a Secret "
                "reference",
                path=("secrets", key),
                hint=f"use secrets: {{{key}: {{secretRef: {{name: SECRET, key: KEY}}}}}}",
                code=f"{target}.secret-ref",
            ))
    return found


def pvc_claims(job: Job) -> list[str]:
    """PersistentVolumeClaims the spec's ``pvc://claim/path`` URIs name, in first-use order."""
    claims: list[str] = []
    for _, uri in job.spec.uris():
        if scheme(uri) == "pvc":
            claim = pvc_parts(uri)[0]
            if claim not in claims:
                claims.append(claim)
    return claims


def pvc_volumes(job: Job) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Volumes and mounts putting each claim at ``/mnt/<claim>``, where the launchers'
    default paths (``ftspec.targets.paths``) look for ``pvc://`` URIs."""
    from ftspec.targets.paths import PVC_MOUNT_ROOT

    volumes, mounts = [], []
    for claim in pvc_claims(job):
        name = ("pvc-" + re.sub(r"[^a-z0-9-]", "-", claim))[:63].rstrip("-")
        volumes.append({"name": name, "persistentVolumeClaim": {"claimName": claim}})
        mounts.append({"name": name, "mountPath": f"{PVC_MOUNT_ROOT}/{claim}"})
    return volumes, mounts


def fetched_in_container(job: Job, target: str) -> list[Diagnostic]:
    """Without an initializer the container reads hf:// (downloads it) and pvc:// (mounted);
    other schemes have nothing that puts the data where the launcher looks."""
    uris = job.spec.uris()
    found = []
    for path, uri in uris:
        if scheme(uri) in ("hf", "pvc"):
            continue
        if path == ("output", "uri") and scheme(uri) == "hf":
            continue
        found.append(Diagnostic(
            Severity.ERROR,
            f"the {target} target reads hf:// and pvc:// locations; nothing fetches "
            f"{scheme(uri)}:// into the container", path=path,
            hint=remote_uri_hint(path), code=f"{target}.uri-scheme"))
    return found


def remote_uri_hint(path: KeyPath) -> str:
    """What to write at ``path`` for a job in a cluster's container."""
    where = format_path(path)
    if path == ("output", "uri"):
        return (f"set {where}: pvc://CLAIM/PATH (a PersistentVolumeClaim the job mounts at "
                "/mnt/CLAIM; the run writes there) or hf://ORG/REPO (pushed to the Hub)")
    return (f"set {where}: pvc://CLAIM/PATH (the files copied to a PersistentVolumeClaim) "
            "or hf://ORG/NAME (downloaded in the container)")
