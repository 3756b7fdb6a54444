"""Fewer processes than GPUs on the HF Trainer launchers is refused at
``resources.processes_per_node`` (issue 37, item 6): one process that sees every GPU is
wrapped in nn.DataParallel (the real batch multiplied by the GPU count), more than one leaves
GPUs idle; before, both compiled without a word."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec

REPO = Path(__file__).resolve().parents[2]


def _errors(example: str, *sets: str) -> list[str]:
    done = compile_spec(SpecInput(REPO / "examples" / example, (), sets), "artifacts",
                        CompileOptions(schema="on-error"))
    return [d.format() for d in done.diagnostics if d.is_error
            and d.path == ("resources", "processes_per_node")]


@pytest.mark.parametrize("example", ["sfttrainer-lora-benchmark.yaml",
                                     "sfttrainer-fms-hf-tuning.yaml"])
def test_one_process_on_several_gpus_is_refused_as_data_parallel(example: str) -> None:
    (error,) = _errors(example, "resources.processes_per_node=1")
    assert "nn.DataParallel" in error and "processes_per_node 1 on" in error, error


def test_fewer_processes_than_gpus_name_the_idle_ones() -> None:
    (error,) = _errors("sfttrainer-fms-hf-tuning.yaml", "resources.processes_per_node=2")
    assert "processes_per_node 2 on 8 GPUs per node: 2 processes train on 2 of the 8 GPUs; 6 stay idle" in error, error


@pytest.mark.parametrize("example", ["sfttrainer-lora-benchmark.yaml",
                                     "sfttrainer-fms-hf-tuning.yaml"])
def test_one_process_per_gpu_is_the_default_and_passes(example: str) -> None:
    assert _errors(example) == []
