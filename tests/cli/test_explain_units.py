"""`ftspec explain` speaks in the units and the device of the spec: sizes in the unit they
fill (MiB for a small run, not "0.00 GiB"), parameter counts with a suffix (not
"1.6e-05 B of 0.000114688 B"), and no table of GPUs for a CPU run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ftspec.compiler.units import count, size
from helpers.cli_run import run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_sizes_and_counts() -> None:
    assert [size(1.5), size(0.76), size(448 / 2**20), size(512 / 2**30)] == \
        ["1.50 GiB", "778 MiB", "448 KiB", "512 B"]
    assert [count(950), count(16_000), count(114_688), count(6.74e6), count(8.03e9)] == \
        ["950", "16K", "115K", "6.74M", "8.03B"]


def test_a_cpu_run_is_explained_for_the_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", str(EXAMPLES / "tiny-local.yaml"))
    assert code == 0
    assert "fit by accelerator" not in out and "NVIDIA" not in out, out
    assert "memory per process (estimate)" in out
    assert re.search(r"trainable params +16K of 115K \(14%\)", out), out
    assert not re.search(r"\de-\d", out), out  # no exponent in a human view
    assert re.search(r"^a CPU run: needs about \d+ MiB of memory per process$", out, re.MULTILINE), out


def test_a_gpu_run_keeps_the_accelerator_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", str(EXAMPLES / "kubeflow-llama32-1b-lora-alpaca.yaml"))
    assert code == 0
    assert "fit by accelerator (same topology)" in out and "NVIDIA H100 80GB" in out
    assert re.search(r"trainable params +[\d.]+M of 1.24B", out), out
    assert re.search(r"NVIDIA V100 16GB +15.78 GiB +no +-\d+ MiB", out), out
