"""Locating the upstream CRDs and runtimes (``<repo root>/../shared/upstream``), read at run time."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINJOB_CRD_FILE = "trainer.kubeflow.org_trainjobs.yaml"
TRAINER_CRD_FILES = (
    TRAINJOB_CRD_FILE,
    "trainer.kubeflow.org_trainingruntimes.yaml",
    "trainer.kubeflow.org_clustertrainingruntimes.yaml",
)
KUBERAY_CRD_FILES = ("ray.io_rayjobs.yaml", "ray.io_rayclusters.yaml")
DEFAULT_RUNTIME_PATTERNS = ("torchtune-*.yaml",)


class UpstreamMissing(FileNotFoundError):
    """The shared upstream folder (or a file in it) is not there."""


def upstream_dir() -> Path | None:
    """``$FTSPEC_UPSTREAM_DIR`` or ``<repo root>/../shared/upstream``; None when absent."""
    configured = os.environ.get("FTSPEC_UPSTREAM_DIR")
    path = Path(configured) if configured else REPO_ROOT.parent / "shared" / "upstream"
    return path if path.is_dir() else None


def require_upstream_dir(explicit: Path | None = None) -> Path:
    path = explicit or upstream_dir()
    if path is None or not path.is_dir():
        where = explicit or os.environ.get("FTSPEC_UPSTREAM_DIR") or REPO_ROOT.parent / "shared" / "upstream"
        raise UpstreamMissing(f"upstream CRDs/runtimes not found at {where} (set FTSPEC_UPSTREAM_DIR)")
    return path


def trainjob_crd_path(root: Path, version: str | None = None) -> Path:
    """The TrainJob CRD: master copy when ``version`` is None/"master", else ``crds/<version>/``."""
    crds = root / "kubeflow-trainer" / "crds"
    path = crds / TRAINJOB_CRD_FILE if version in (None, "master") else crds / str(version) / TRAINJOB_CRD_FILE
    if not path.is_file():
        available = sorted(p.name for p in crds.iterdir() if p.is_dir())
        raise UpstreamMissing(f"no TrainJob CRD for version {version!r} at {path} (available: master, {available})")
    return path


def crd_paths(root: Path, trainjob_version: str | None = None) -> list[Path]:
    """All CRD files to install: Trainer (TrainJob at ``trainjob_version``) and KubeRay."""
    trainer = root / "kubeflow-trainer" / "crds"
    paths = [trainjob_crd_path(root, trainjob_version)]
    paths += [trainer / name for name in TRAINER_CRD_FILES[1:]]
    paths += [root / "kuberay" / "crds" / name for name in KUBERAY_CRD_FILES]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise UpstreamMissing(f"missing upstream CRD files: {missing}")
    return paths


def runtime_paths(root: Path, patterns: tuple[str, ...] | list[str] = DEFAULT_RUNTIME_PATTERNS) -> list[Path]:
    folder = root / "kubeflow-trainer" / "runtimes"
    found = sorted({p for pattern in patterns for p in folder.glob(pattern)})
    if patterns and not found:
        raise UpstreamMissing(f"no runtime manifests matching {list(patterns)} in {folder}")
    return found
