"""The upstream CRDs and runtimes the tests read, assembled from the pinned Go modules.

Tests find the upstream Kubeflow Trainer and KubeRay files in one folder layout
(``harness.upstream``):
``kubeflow-trainer/crds/*.yaml`` (the pinned Trainer release), ``kubeflow-trainer/crds/<version>/``
(older TrainJob CRDs for version-skew tests), ``kubeflow-trainer/runtimes/*.yaml`` and
``kuberay/crds/*.yaml``. This module fills that layout with verbatim copies of the files in the Go
module cache, at the versions pinned in ``controlplane_build.PINS`` (the ones the real control plane
is built from), so a clone needs nothing beside it. The folder is assembled once per set of sources
under ``$FTSPEC_CACHE_DIR/upstream/<key>/`` (default ``~/.cache/ftspec``); ``SOURCES.txt`` in it
names each copy's module, version, path and sha256.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.controlplane_build import (
    KUBERAY,
    PINS,
    TRAINER,
    BuildError,
    Pins,
    cache_root,
    module_dir,
)
from harness.upstream import (
    KUBERAY_CRD_FILES,
    TRAINER_CRD_FILES,
    TRAINJOB_CRD_FILE,
    UpstreamMissing,
)

LAYOUT_VERSION = "1"
# Released TrainJob CRDs that tests install by version (``crds/<version>/``), besides the pinned.
OLDER_TRAINJOB_VERSIONS = ("v2.1.0",)
TRAINER_CRDS = "manifests/base/crds"
TRAINER_RUNTIMES = "manifests/base/runtimes"
KUBERAY_CRDS = "config/crd/bases"
# local runtime file -> its path under manifests/base/runtimes in the Trainer module
RUNTIMES = {
    "torchtune-llama3.2-1b.yaml": "torchtune/llama3_2/llama3_2_1B.yaml",
    "torchtune-llama3.2-3b.yaml": "torchtune/llama3_2/llama3_2_3B.yaml",
    "torchtune-qwen2.5-1.5b.yaml": "torchtune/qwen2_5/qwen2_5_1.5B.yaml",
    "torch-distributed.yaml": "torch_distributed.yaml",
    "torch-distributed-with-cache.yaml": "data-cache/torch_distributed_with_cache.yaml",
    "deepspeed-distributed.yaml": "deepspeed_distributed.yaml",
}
SOURCES_FILE = "SOURCES.txt"


@dataclass(frozen=True)
class Copy:
    """One file of the layout: ``dest`` (relative to the folder) is ``path`` in module@version."""

    dest: str
    module: str
    version: str
    path: str


def copies(pins: Pins = PINS) -> list[Copy]:
    """Every file of the layout and where it comes from."""
    trainer = "kubeflow-trainer"
    out = [Copy(f"{trainer}/crds/{name}", TRAINER, pins.trainer, f"{TRAINER_CRDS}/{name}")
           for name in TRAINER_CRD_FILES]
    out += [Copy(f"{trainer}/crds/{version}/{TRAINJOB_CRD_FILE}", TRAINER, version,
                 f"{TRAINER_CRDS}/{TRAINJOB_CRD_FILE}")
            for version in sorted({pins.trainer, *OLDER_TRAINJOB_VERSIONS})]
    out += [Copy(f"{trainer}/runtimes/{dest}", TRAINER, pins.trainer, f"{TRAINER_RUNTIMES}/{src}")
            for dest, src in RUNTIMES.items()]
    out += [Copy(f"kuberay/crds/{name}", KUBERAY, pins.kuberay, f"{KUBERAY_CRDS}/{name}")
            for name in KUBERAY_CRD_FILES]
    return out


def key(pins: Pins = PINS) -> str:
    sources = [c.__dict__ for c in copies(pins)]
    material = json.dumps({"layout": LAYOUT_VERSION, "copies": sources}, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def assembled_dir(pins: Pins = PINS) -> Path:
    """The folder for ``pins``, assembled from the module cache the first time it is asked for."""
    root = cache_root() / "upstream"
    folder = root / key(pins)
    if (folder / SOURCES_FILE).is_file():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (folder / SOURCES_FILE).is_file():
            _assemble(copies(pins), folder)
    return folder


def _assemble(files: list[Copy], folder: Path) -> None:
    """Copy ``files`` into a scratch folder, then rename it into place (never seen half-made)."""
    scratch = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    modules: dict[tuple[str, str], Path] = {}
    lines: list[str] = []
    try:
        for item in files:
            ref = (item.module, item.version)
            if ref not in modules:
                modules[ref] = _module(item.module, item.version)
            source = modules[ref] / item.path
            if not source.is_file():
                raise UpstreamMissing(
                    f"{item.module}@{item.version} has no {item.path} (wanted for {item.dest})")
            dest = scratch / item.dest
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)
            digest = hashlib.sha256(dest.read_bytes()).hexdigest()
            lines.append(f"{item.dest}\t{item.module}@{item.version}\t{item.path}\t{digest}\n")
        (scratch / SOURCES_FILE).write_text("".join(lines), encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)  # a folder left without SOURCES.txt
        scratch.rename(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _module(module: str, version: str) -> Path:
    try:
        return module_dir(module, version)
    except BuildError as exc:
        raise UpstreamMissing(f"cannot read the upstream files from the Go module cache: {exc}") \
            from exc
