"""A launcher's own command on Kubeflow Trainer (accelerate, fms_hf_tuning): its generated
files in a ConfigMap mounted into the trainer container, and
(``deploy.kubeflow.generate_runtime``) a namespaced TrainingRuntime whose ``node`` container
runs the launcher's command (``accelerate launch``).

Multi-node: the Trainer's torch plugin gives every ``node`` pod ``PET_NODE_RANK``,
``PET_MASTER_ADDR`` and ``PET_MASTER_PORT``; the command's rank / rendezvous flags are
pointed at them with Kubernetes' ``$(VAR)`` expansion (the launcher's ``rank_flags``), so
one pod template serves all nodes.
"""

from __future__ import annotations

from typing import Any

from ftspec.spec.ir import Job
from ftspec.spec.platforms import TRAINER_API, TRAINER_GROUP
from ftspec.targets import shell
from ftspec.targets.base import Launch
from ftspec.targets.embed import relocate, set_flags
from ftspec.targets.kube import object_meta, pod_placement, pvc_volumes

API = TRAINER_API
FILES_MOUNT = "/etc/ftspec"
FILES_VOLUME = "ftspec-files"
TRAINER_STEP_LABEL = f"{TRAINER_GROUP}/trainjob-ancestor-step"
FRAMEWORK_LABEL = f"{TRAINER_GROUP}/framework"
NODE_ENV = ("$(PET_NODE_RANK)", "$(PET_MASTER_ADDR)", "$(PET_MASTER_PORT)")
"""This node's rank, the rank-0 node's address and port, as the torch plugin sets them."""


def configmap_name(job: Job) -> str:
    return f"{job.name}-files"


def runtime_name(job: Job) -> str:
    return f"{job.name}-runtime"


def container_command(job: Job, launch: Launch) -> list[str]:
    """The launcher's argv with its files read from the ConfigMap mount, and multi-node
    rank/rendezvous flags taken from the torch plugin's environment."""
    args = [shell.kube_literal(a) for a in relocate(launch.argv, launch.files, FILES_MOUNT)]
    if job.nodes == 1:
        return args
    from ftspec.targets import get_launcher

    return set_flags(args, get_launcher(job.launcher).rank_flags(job, *NODE_ENV))


def files_volume(job: Job) -> dict[str, Any]:
    return {"name": FILES_VOLUME, "configMap": {"name": configmap_name(job)}}


def files_mount() -> dict[str, Any]:
    return {"name": FILES_VOLUME, "mountPath": FILES_MOUNT, "readOnly": True}


def pod_volumes(job: Job, launch: Launch) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ConfigMap with the launcher's files and the spec's pvc:// claims."""
    volumes, mounts = pvc_volumes(job)
    if launch.files:
        volumes = [files_volume(job), *volumes]
        mounts = [files_mount(), *mounts]
    return volumes, mounts


def configmap(job: Job, launch: Launch) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": object_meta(job, configmap_name(job)),
        "data": dict(sorted(launch.files.items())),
    }


def training_runtime(job: Job, launch: Launch) -> dict[str, Any]:
    meta = object_meta(job, runtime_name(job))
    meta["labels"] = {**meta["labels"], FRAMEWORK_LABEL: "torch"}
    container: dict[str, Any] = {"name": "node"}
    if job.spec.deploy.scheduling.image:
        container["image"] = job.spec.deploy.scheduling.image
    container["command"] = container_command(job, launch)
    volumes, mounts = pod_volumes(job, launch)
    if mounts:
        container["volumeMounts"] = mounts
    pod: dict[str, Any] = {"containers": [container], **pod_placement(job, gpu=True)}
    if volumes:
        pod["volumes"] = volumes
    jobset: dict[str, Any] = {"replicatedJobs": [{
        "name": "node",
        "template": {
            "metadata": {"labels": {TRAINER_STEP_LABEL: "trainer"}},
            "spec": {"template": {"spec": pod}},
        },
    }]}
    policy = failure_policy(job)
    if policy:
        jobset["failurePolicy"] = policy
    return {
        "apiVersion": API,
        "kind": "TrainingRuntime",
        "metadata": meta,
        "spec": {
            "mlPolicy": {"numNodes": job.nodes, "torch": {}},
            "template": {"spec": jobset},
        },
    }


def failure_policy(job: Job) -> dict[str, Any]:
    """``deploy.kubeflow.failure_policy`` as the JobSet's ``failurePolicy`` (empty: none)."""
    fp = job.spec.deploy.kubeflow.failure_policy
    if fp is None:
        return {}
    rules = []
    for rule in fp.rules:
        out: dict[str, Any] = {"name": rule.name, "action": rule.action}
        if rule.on_job_failure_reasons:
            out["onJobFailureReasons"] = list(rule.on_job_failure_reasons)
        if rule.on_job_failure_message_patterns:
            out["onJobFailureMessagePatterns"] = list(rule.on_job_failure_message_patterns)
        if rule.target_replicated_jobs:
            out["targetReplicatedJobs"] = list(rule.target_replicated_jobs)
        rules.append(out)
    policy: dict[str, Any] = {"maxRestarts": fp.max_restarts,
                              "restartStrategy": fp.restart_strategy}
    if rules:
        policy["rules"] = rules
    return policy
