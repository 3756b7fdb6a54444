"""Locations of the upstream CRDs (test data outside the repo); tests skip visibly without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.crd_schema import upstream_dir

REPO = Path(__file__).resolve().parents[2]

TRAINJOB_CRDS = {
    "master": "kubeflow-trainer/crds/trainer.kubeflow.org_trainjobs.yaml",
    "v2.3.0": "kubeflow-trainer/crds/v2.3.0/trainer.kubeflow.org_trainjobs.yaml",
    "v2.1.0": "kubeflow-trainer/crds/v2.1.0/trainer.kubeflow.org_trainjobs.yaml",
}
TRAININGRUNTIME_CRD = "kubeflow-trainer/crds/trainer.kubeflow.org_trainingruntimes.yaml"
RAYJOB_CRD = "kuberay/crds/ray.io_rayjobs.yaml"


def crd(relative: str) -> Path:
    """The CRD file, or skip the test naming the path that is missing."""
    path = upstream_dir(REPO) / relative
    if not path.is_file():
        pytest.skip(f"upstream CRD not found: {path} (set FTSPEC_UPSTREAM_DIR)")
    return path
