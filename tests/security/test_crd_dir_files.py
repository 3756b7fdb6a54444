"""``FTSPEC_CRD_DIR`` is read only as regular files under a size cap (issue 34): a FIFO named
``*.yaml`` in the folder used to hang ``validate`` (opening it blocks until a writer comes),
and a 300 MB file was parsed whole (1.9 GB). Each is now passed over with a warning, and the
real CRDs after them are still checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.upstream import upstream_root

ROOT = Path(__file__).resolve().parents[2]
GOOD = "examples/kubeflow-llama32-1b-lora-alpaca.yaml"


@pytest.mark.slow
def test_a_fifo_and_a_huge_file_in_the_crd_folder_are_passed_over(tmp_path: Path) -> None:
    hostile = tmp_path / "crds"
    hostile.mkdir()
    os.mkfifo(hostile / "a-fifo.yaml")
    with open(hostile / "b-huge.yaml", "wb") as handle:
        handle.truncate(300 << 20)  # sparse: 300 MB as the folder sees it, no disk used
    (hostile / "c-deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    up = upstream_root()
    dirs = [hostile, up / "kubeflow-trainer" / "crds", up / "kuberay" / "crds"]
    env = {**os.environ, "FTSPEC_CRD_DIR": os.pathsep.join(map(str, dirs)), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "ftspec.cli", "validate", GOOD], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "a-fifo.yaml: not read (not a regular file)" in out
    assert "b-huge.yaml: not read (larger than 16 MiB)" in out
    assert "c-deep.yaml: not read (not valid YAML, or nested too deeply)" in out
    assert "Traceback" not in out and "internal error" not in out
