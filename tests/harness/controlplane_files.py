"""The manifests the real control plane installs, read from the pinned modules in the Go module cache.

CRDs, webhook configurations (with the upstream kustomize patches applied), training runtimes and
kwok stages come from exactly the module versions the binaries in ``controlplane_build`` are built
from, so a user's clone needs nothing beside it (no ``../shared``). The module cache is filled by
the build; ``module_dir`` downloads a module that is missing.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from harness.controlplane_build import JOBSET, KUBERAY, KWOK, PINS, TRAINER, Pins, module_dir


def _load_all(path: Path) -> list[dict[str, Any]]:
    with path.open("rb") as handle:
        return [doc for doc in yaml.load_all(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if doc]


def apply_json_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``add`` / ``replace`` operations of RFC 6902 that kustomize's patch files here use."""
    out = copy.deepcopy(doc)
    for op in ops:
        if op["op"] not in ("add", "replace"):
            raise ValueError(f"unsupported JSON patch op {op['op']!r}")
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].lstrip("/").split("/")]
        node: Any = out
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
            if op["op"] == "replace":
                node[index] = op["value"]
            else:
                node.insert(index, op["value"])
        else:
            node[last] = op["value"]
    return out


class ControlPlaneFiles:
    """Paths and documents of one pin set."""

    def __init__(self, pins: Pins = PINS) -> None:
        self.pins = pins
        self.trainer = module_dir(TRAINER, pins.trainer)
        self.jobset = module_dir(JOBSET, pins.jobset)
        self.kuberay = module_dir(KUBERAY, pins.kuberay)
        self.kwok = module_dir(KWOK, pins.kwok)

    # ------------------------------------------------------------------ CRDs

    def trainer_crds(self) -> list[Path]:
        return sorted((self.trainer / "manifests/base/crds").glob("trainer.kubeflow.org_*.yaml"))

    def jobset_crds(self) -> list[Path]:
        return sorted((self.jobset / "config/components/crd/bases").glob("*.yaml"))

    def kuberay_crds(self) -> list[Path]:
        """Every ray.io CRD: the operator waits for the caches of all the kinds it watches
        (RayService included) and exits when one is not served."""
        return sorted((self.kuberay / "config/crd/bases").glob("ray.io_*.yaml"))

    def kwok_stage_crd(self) -> Path:
        return self.kwok / "kustomize/crd/bases/kwok.x-k8s.io_stages.yaml"

    def crds(self) -> list[dict[str, Any]]:
        paths = [*self.trainer_crds(), *self.jobset_crds(), *self.kuberay_crds(), self.kwok_stage_crd()]
        return [doc for path in paths for doc in _load_all(path)]

    # ------------------------------------------------------------------ webhooks

    def trainer_webhooks(self) -> list[dict[str, Any]]:
        folder = self.trainer / "manifests/base/webhook"
        return self._patched_webhooks(
            folder / "manifests.yaml",
            {
                "MutatingWebhookConfiguration": [folder / "patch_mutating.yaml"],
                "ValidatingWebhookConfiguration": [folder / "patch_validating.yaml"],
            },
        )

    def jobset_webhooks(self) -> list[dict[str, Any]]:
        folder = self.jobset / "config/components/webhook"
        docs = self._patched_webhooks(
            folder / "manifests.yaml",
            {
                "MutatingWebhookConfiguration": [folder / "patches/mutating-patch.yaml"],
                "ValidatingWebhookConfiguration": [folder / "patches/validating-patch.yaml"],
            },
        )
        for doc in docs:  # kustomize's namePrefix for the jobset install
            doc["metadata"]["name"] = f"jobset-{doc['metadata']['name']}"
        return docs

    @staticmethod
    def _patched_webhooks(manifests: Path, patches: dict[str, list[Path]]) -> list[dict[str, Any]]:
        out = []
        for doc in _load_all(manifests):
            for patch in patches.get(doc["kind"], []):
                ops = yaml.safe_load(patch.read_text(encoding="utf-8"))
                doc = apply_json_patch(doc, ops)
            out.append(doc)
        return out

    # ------------------------------------------------------------------ runtimes and stages

    def runtime_paths(self) -> list[Path]:
        """The upstream ClusterTrainingRuntimes a Trainer install ships (torchtune and the generic ones)."""
        base = self.trainer / "manifests/base/runtimes"
        return sorted([*base.glob("torchtune/*/*.yaml"), base / "torch_distributed.yaml", base / "deepspeed_distributed.yaml"])

    def runtimes(self) -> list[dict[str, Any]]:
        return [doc for path in self.runtime_paths() for doc in _load_all(path) if doc.get("kind") == "ClusterTrainingRuntime"]

    def kwok_stages(self) -> list[dict[str, Any]]:
        """Node stages (fast) and pod stages (general: init containers, ready, complete, delete)."""
        root = self.kwok / "kustomize/stage"
        paths = [*sorted((root / "node/fast").glob("*.yaml")), *sorted((root / "pod/general").glob("pod-*.yaml"))]
        return [doc for path in paths for doc in _load_all(path) if doc.get("kind") == "Stage"]
