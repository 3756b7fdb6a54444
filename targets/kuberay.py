"""kuberay: a KubeRay ``RayJob`` (ray.io/v1) that creates a RayCluster for the job, runs the
launcher's command on it and (by default) deletes the cluster when the job ends.

The cluster: a head group (no training work: ``num-cpus: "0"``) and one worker group sized
from ``resources`` (``replicas`` = nodes, cpu/memory/``nvidia.com/gpu`` per worker, the
accelerator's node selector, the custom Ray resources of ``deploy.ray_nodes`` advertised in
``rayStartParams``; with RoCE the IPC_LOCK capability and the RDMA devices). One node: the
entrypoint asks for the node's GPUs (``entrypointNumGpus``), so the launcher runs on a GPU
worker; CPU jobs ask for one CPU. More nodes: the entrypoint is the multi-node driver
(``ftspec.targets.ray_nodes``), which places one bundle per worker. Files, downloads, ``jobId`` and metadata are the
``ray_payload`` ones; secrets are Secret references in the pods' environment, which the Ray
processes inherit.

KubeRay validates most of a RayJob in its controller, not the API server: a bad one only
shows up as ``ValidationFailed``. ``check`` reports those rules now.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from ftspec.spec.catalog.accelerators import RAY_TYPE_PREFIX
from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.ir import Job
from ftspec.targets import get_launcher, shell
from ftspec.targets.base import Artifact, Target
from ftspec.targets.embed import launcher_check
from ftspec.targets.kube import (
    fetched_in_container,
    labels,
    object_meta,
    pod_placement,
    pvc_volumes,
    resources_per_node,
    secret_env,
    secrets_need_refs,
    wandb_needs_key,
)
from ftspec.targets.kube_names import name_diagnostic, name_limit
from ftspec.targets.merge_patch import check_patch, merge_patch
from ftspec.targets.ray_nodes import check as ray_nodes_check
from ftspec.targets.ray_nodes import custom_resources
from ftspec.targets.ray_payload import launch_for, metadata, ray_job
from ftspec.targets.render import to_yaml

API = "ray.io/v1"
ROCE_DEVICE = "nvidia.com/roce_gdr"
"""RDMA device resource of RoCE-capable NICs (NVIDIA network operator), as in the seed."""
HEAD_PORTS = ({"containerPort": 6379, "name": "gcs-server"},
              {"containerPort": 8265, "name": "dashboard"},
              {"containerPort": 10001, "name": "client"})


def image(job: Job) -> str:
    kr = job.spec.deploy.kuberay
    chosen = kr.image or job.spec.deploy.scheduling.image
    if chosen:
        return chosen
    return f"rayproject/ray:{kr.ray_version}{'-gpu' if job.gpus_per_node else ''}"


def _pod(job: Job, container: dict[str, Any], *, gpu: bool = False) -> dict[str, Any]:
    volumes, mounts = pvc_volumes(job)
    env = secret_env(job)
    if env:
        container["env"] = env
    if mounts:
        container["volumeMounts"] = mounts
    spec: dict[str, Any] = {"containers": [container], **pod_placement(job, gpu=gpu)}
    if volumes:
        spec["volumes"] = volumes
    return {"metadata": {"labels": labels(job)}, "spec": spec}


def worker_resources(job: Job) -> dict[str, float]:
    """Custom Ray resources each worker advertises (``rayStartParams.resources``): what the
    node bundles ask for, except ``accelerator_type:*``, which Ray detects on a GPU node."""
    return {k: v for k, v in custom_resources(job).items()
            if not k.startswith(RAY_TYPE_PREFIX)}


def cluster_spec(job: Job) -> dict[str, Any]:
    kr = job.spec.deploy.kuberay
    head_res = {"cpu": kr.head_cpu, "memory": kr.head_memory}
    head = {
        "name": "ray-head", "image": image(job),
        "ports": [dict(p) for p in HEAD_PORTS],
        "resources": {"requests": dict(head_res), "limits": dict(head_res)},
    }
    worker: dict[str, Any] = {"name": "ray-worker", "image": image(job)}
    res = resources_per_node(job)
    roce = job.spec.deploy.ray_nodes.roce
    if roce.enabled and roce.devices_per_node:
        for part in ("requests", "limits"):
            res.setdefault(part, {})[ROCE_DEVICE] = roce.devices_per_node
    if res:
        worker["resources"] = res
    if roce.enabled:
        worker["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    start: dict[str, str] = {}
    offered = worker_resources(job)
    if offered:
        # KubeRay pastes rayStartParams into the `ray start` shell line as --key=value.
        start["resources"] = shell.quote(json.dumps(offered, sort_keys=True,
                                                    separators=(",", ":")))
    return {
        "rayVersion": kr.ray_version,
        "headGroupSpec": {
            "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0"},
            "template": _pod(job, head),
        },
        "workerGroupSpecs": [{
            "groupName": "gpu-workers" if job.gpus_per_node else "workers",
            "replicas": job.nodes,
            "minReplicas": job.nodes,
            "maxReplicas": job.nodes,
            "numOfHosts": 1,
            "rayStartParams": start,
            "template": _pod(job, worker, gpu=True),
        }],
    }


def rayjob(job: Job) -> dict[str, Any]:
    kr = job.spec.deploy.kuberay
    built = ray_job(job, launch_for(job), {}, [], {})
    spec: dict[str, Any] = {
        "entrypoint": built["entrypoint"],
        "jobId": built["submission_id"],
        "metadata": metadata(job),
    }
    if built["runtime_env"]:
        spec["runtimeEnvYAML"] = to_yaml(built["runtime_env"])
    # More nodes: the driver only coordinates (on the head); the node bundles hold the GPUs.
    if job.nodes == 1 and job.gpus_per_node:
        spec["entrypointNumGpus"] = job.gpus_per_node
    elif job.nodes == 1:
        spec["entrypointNumCpus"] = 1
    spec["submissionMode"] = kr.submission_mode
    spec["shutdownAfterJobFinishes"] = kr.shutdown_after_job_finishes
    spec["ttlSecondsAfterFinished"] = kr.ttl_seconds_after_finished
    if kr.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = kr.active_deadline_seconds
    spec["rayClusterSpec"] = cluster_spec(job)
    obj = {"apiVersion": API, "kind": "RayJob", "metadata": object_meta(job), "spec": spec}
    # overrides.rayjob: the user's merge patch, applied after everything else.
    patched: dict[str, Any] = merge_patch(obj, job.spec.overrides.rayjob)
    return patched


def check(job: Job) -> list[Diagnostic]:
    found = ray_nodes_check(job, "kuberay") + secrets_need_refs(job, "kuberay")
    found += wandb_needs_key(job, "kuberay")
    found += check_patch(job.spec.overrides.rayjob, "rayjob", "RayJob", "kuberay")
    # a launcher's download step fetches the model on the node (torchtune's tune download)
    downloads = bool(get_launcher(job.launcher).download_step(job))
    found += [d for d in fetched_in_container(job, "kuberay")
              if not (downloads and d.path == ("model", "uri"))]
    limit = name_limit(job.spec, "kuberay")
    too_long = limit and name_diagnostic(job.name, limit, "kuberay.name-length", "RayJob")
    if too_long:
        found.append(too_long)
    kr = job.spec.deploy.kuberay
    shared = job.spec.deploy.scheduling.image
    if kr.image and shared and shared != kr.image:
        found.append(Diagnostic(
            Severity.WARNING, f"deploy.kuberay.image ({kr.image}) is the RayCluster's image; "
            f"deploy.scheduling.image ({shared}) is not used", path=("deploy", "scheduling",
                                                                      "image"),
            hint="remove one of the two", code="kuberay.image-shadowed"))
    if kr.ttl_seconds_after_finished > 0 and not kr.shutdown_after_job_finishes:
        found.append(Diagnostic(
            Severity.ERROR, "ttl_seconds_after_finished needs shutdown_after_job_finishes: "
            "true (KubeRay rejects it otherwise)",
            path=("deploy", "kuberay", "ttl_seconds_after_finished"),
            hint="set ttl_seconds_after_finished: 0, or shutdown_after_job_finishes: true",
            code="kuberay.ttl-shutdown"))
    if not (kr.image or job.spec.deploy.scheduling.image):
        found.append(Diagnostic(
            Severity.WARNING, f"the default image {image(job)} has neither torchtune nor "
            "accelerate installed", path=("deploy", "kuberay", "image"),
            hint="name an image that has the launcher (and ftspec for its default "
                 "entrypoint)", code="kuberay.image"))
    return found


class KubeRayTarget:
    name = "kuberay"

    def check(self, job: Job) -> list[Diagnostic]:
        return launcher_check(job) + check(job)

    def compile(self, job: Job) -> list[Artifact]:
        obj = rayjob(job)
        return [Artifact("rayjob.yaml", "manifest", partial(to_yaml, obj), obj)]


TARGET: Target = KubeRayTarget()
