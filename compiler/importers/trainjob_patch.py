"""The pod settings of a TrainJob as the spec's: ftspec's own ``runtimePatches`` entry.

A TrainJob ftspec compiled (found in a file, or live after its spec was lost) carries its
placement in the ``runtimePatches`` entry of manager ``ftspec.dev/ftspec``: the node
selector (the accelerator's ``nvidia.com/gpu.product`` label and ``deploy.scheduling``'s
own keys), tolerations, image pull secrets, service account, and the ``pvc://`` output
mounted at /workspace/output. Read back here, the spec compiles to the same entry; any
other manager's patch has no spec field and stays in ``overrides.trainjob``.
"""

from __future__ import annotations

from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.spec.catalog.accelerators import ACCELERATORS, NODE_LABEL
from ftspec.targets.kubeflow import OUTPUT_MOUNT, OUTPUT_VOLUME, PATCH_MANAGER

SCHED = ("deploy", "scheduling")


def ftspec_patch(d: SpecDraft) -> None:
    patches = d.source.data["spec"].get("runtimePatches") or []
    for i, patch in enumerate(patches if isinstance(patches, list) else []):
        if not isinstance(patch, dict) or patch.get("manager") != PATCH_MANAGER:
            continue
        jobs = (((patch.get("trainingRuntimeSpec") or {}).get("template") or {})
                .get("spec") or {}).get("replicatedJobs") or []
        for j, job in enumerate(jobs):
            if isinstance(job, dict) and job.get("name") == "node":
                pod = (((job.get("template") or {}).get("spec") or {}).get("template")
                       or {}).get("spec") or {}
                at = ("spec", "runtimePatches", i, "trainingRuntimeSpec", "template", "spec",
                      "replicatedJobs", j, "template", "spec", "template", "spec")
                _pod(d, pod, at)


def _pod(d: SpecDraft, pod: dict[str, Any], at: tuple[Any, ...]) -> None:
    selector = dict(pod.get("nodeSelector") or {})
    product = selector.pop(NODE_LABEL, None)
    by_label = {a.product_label: key for key, a in ACCELERATORS.items()}
    if product in by_label and d.get(("resources", "gpus_per_node")):
        d.put(("resources", "accelerator"), by_label[product],
              d.origin_of(at + ("nodeSelector", NODE_LABEL)))
    if selector:
        d.put(SCHED + ("node_selector",), selector, d.origin_of(at + ("nodeSelector",)))
    if pod.get("tolerations"):
        d.put(SCHED + ("tolerations",), pod["tolerations"], d.origin_of(at + ("tolerations",)))
    secrets = [s.get("name") for s in pod.get("imagePullSecrets") or [] if isinstance(s, dict)]
    if secrets:
        d.put(SCHED + ("image_pull_secrets",), secrets, d.origin_of(at + ("imagePullSecrets",)))
    if pod.get("serviceAccountName"):
        d.put(SCHED + ("service_account",), pod["serviceAccountName"],
              d.origin_of(at + ("serviceAccountName",)))
    claims = {v.get("name"): (v.get("persistentVolumeClaim") or {}).get("claimName")
              for v in pod.get("volumes") or [] if isinstance(v, dict)}
    for container in pod.get("containers") or []:
        for mount in (container.get("volumeMounts") or []) if isinstance(container, dict) else []:
            claim = claims.get(mount.get("name"))
            if mount.get("name") == OUTPUT_VOLUME and mount.get("mountPath") == OUTPUT_MOUNT \
                    and claim:
                sub = mount.get("subPath")
                d.put(("output", "uri"), f"pvc://{claim}/{sub}" if sub else f"pvc://{claim}",
                      d.origin_of(at + ("volumes",)))
