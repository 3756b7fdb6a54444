"""The upstream CRDs the offline tests read (``harness.upstream``: the pinned Go modules' files).

A file that cannot be found fails the test with the path; it never skips.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.upstream import UpstreamMissing, require_upstream_dir

REPO = Path(__file__).resolve().parents[2]

TRAINJOB_CRDS = {
    "master": "kubeflow-trainer/crds/trainer.kubeflow.org_trainjobs.yaml",  # the pinned release's
    "v2.3.0": "kubeflow-trainer/crds/v2.3.0/trainer.kubeflow.org_trainjobs.yaml",
    "v2.1.0": "kubeflow-trainer/crds/v2.1.0/trainer.kubeflow.org_trainjobs.yaml",
}
TRAININGRUNTIME_CRD = "kubeflow-trainer/crds/trainer.kubeflow.org_trainingruntimes.yaml"
RAYJOB_CRD = "kuberay/crds/ray.io_rayjobs.yaml"


def upstream_root() -> Path:
    """The upstream folder, or fail the test saying why it cannot be had."""
    try:
        return require_upstream_dir()
    except UpstreamMissing as exc:
        pytest.fail(str(exc), pytrace=False)


def crd(relative: str) -> Path:
    """The CRD file, or fail the test naming the path that is missing."""
    path = upstream_root() / relative
    if not path.is_file():
        pytest.fail(f"upstream CRD not found: {path}", pytrace=False)
    return path
