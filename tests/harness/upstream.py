"""Locating the upstream CRDs and runtimes, read at run time.

They come from the pinned Go modules (``harness.upstream_modules`` assembles them once per pin
set), or from ``$FTSPEC_UPSTREAM_DIR`` when that is set. The paths inside the folder are named here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

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
    """The upstream folder (or a file in it) is not there, or cannot be assembled."""


def upstream_dir() -> Path:
    """``$FTSPEC_UPSTREAM_DIR`` when set, else the folder assembled from the pinned Go modules.

    A folder given by the variable must hold the pinned versions' files in the same layout: the
    CEL cases (``helpers.cel_cases``) cover exactly the rules of those files. Raises
    ``UpstreamMissing`` when the modules cannot be read (no Go, no module proxy).
    """
    configured = os.environ.get("FTSPEC_UPSTREAM_DIR")
    if configured:
        return Path(configured)
    from harness.upstream_modules import assembled_dir  # imports this module's names

    return assembled_dir()


def require_upstream_dir(explicit: Path | None = None) -> Path:
    path = explicit or upstream_dir()
    if not path.is_dir():
        raise UpstreamMissing(f"upstream CRDs/runtimes not found at {path} (FTSPEC_UPSTREAM_DIR)")
    return path


def trainjob_crd_path(root: Path, version: str | None = None) -> Path:
    """The TrainJob CRD: the pinned release's when ``version`` is None/"master", else ``crds/<version>/``."""
    crds = root / "kubeflow-trainer" / "crds"
    path = crds / TRAINJOB_CRD_FILE if version in (None, "master") else crds / str(version) / TRAINJOB_CRD_FILE
    if not path.is_file():
        available = sorted(p.name for p in crds.iterdir() if p.is_dir())
        raise UpstreamMissing(f"no TrainJob CRD for version {version!r} at {path} "
                              f"(available: None/'master' for the default copy, {available})")
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


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    """The non-empty YAML documents of ``path`` (libyaml's loader when available: the CRDs are MBs)."""
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open("rb") as handle:
        return [doc for doc in yaml.load_all(handle, Loader=loader) if doc]
