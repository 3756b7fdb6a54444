"""The accelerate launcher on Kubeflow Trainer: its generated files in a ConfigMap mounted
into the trainer container, and (``deploy.kubeflow.generate_runtime``) a namespaced
TrainingRuntime whose ``node`` container runs ``accelerate launch``.

Multi-node: the Trainer's torch plugin gives every ``node`` pod ``PET_NODE_RANK``,
``PET_MASTER_ADDR`` and ``PET_MASTER_PORT``; the command's rank / rendezvous flags are
pointed at them with Kubernetes' ``$(VAR)`` expansion, so one pod template serves all nodes.
"""

from __future__ import annotations

from typing import Any

from ftspec.spec.ir import Job
from ftspec.targets.base import Launch
from ftspec.targets.kube import object_meta, pod_placement

API = "trainer.kubeflow.org/v1alpha1"
FILES_MOUNT = "/etc/ftspec"
FILES_VOLUME = "ftspec-files"
TRAINER_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
NODE_ENV_FLAGS = {
    "--machine_rank": "$(PET_NODE_RANK)",
    "--main_process_ip": "$(PET_MASTER_ADDR)",
    "--main_process_port": "$(PET_MASTER_PORT)",
}


def configmap_name(job: Job) -> str:
    return f"{job.name}-files"


def runtime_name(job: Job) -> str:
    return f"{job.name}-runtime"


def container_command(job: Job, launch: Launch) -> list[str]:
    """The launcher's argv with its files read from the ConfigMap mount, and multi-node
    rank/rendezvous flags taken from the torch plugin's environment."""
    names = set(launch.files)
    out: list[str] = []
    args = list(launch.argv)
    i = 0
    while i < len(args):
        item = args[i]
        flag, eq, value = item.partition("=")
        if job.nodes > 1 and flag in NODE_ENV_FLAGS:
            out.append(f"{flag}={NODE_ENV_FLAGS[flag]}" if eq else flag)
            if not eq:
                out.append(NODE_ENV_FLAGS[flag])
                i += 1
        elif eq and value in names and flag.startswith("-"):
            out.append(f"{flag}={FILES_MOUNT}/{value}")
        elif item in names:
            out.append(f"{FILES_MOUNT}/{item}")
        else:
            out.append(item)
        i += 1
    if job.nodes > 1:
        for flag, value in NODE_ENV_FLAGS.items():
            if not any(a == flag or a.startswith(flag + "=") for a in out):
                out += [flag, value]
    return out


def files_volume(job: Job) -> dict[str, Any]:
    return {"name": FILES_VOLUME, "configMap": {"name": configmap_name(job)}}


def files_mount() -> dict[str, Any]:
    return {"name": FILES_VOLUME, "mountPath": FILES_MOUNT, "readOnly": True}


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
    container: dict[str, Any] = {
        "name": "node",
        "image": job.spec.deploy.scheduling.image,
        "command": container_command(job, launch),
    }
    if launch.files:
        container["volumeMounts"] = [files_mount()]
    pod: dict[str, Any] = {"containers": [container], **pod_placement(job)}
    if launch.files:
        pod["volumes"] = [files_volume(job)]
    return {
        "apiVersion": API,
        "kind": "TrainingRuntime",
        "metadata": meta,
        "spec": {
            "mlPolicy": {"numNodes": job.nodes, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{
                "name": "node",
                "template": {
                    "metadata": {"labels": {TRAINER_STEP_LABEL: "trainer"}},
                    "spec": {"template": {"spec": pod}},
                },
            }]}},
        },
    }
