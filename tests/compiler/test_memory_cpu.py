"""The memory estimate against the live tensors of ftspec's compiled jobs on the CPU.

Every file bench/results/cpu_memory-*.json (written by bench/cpu_memory.py: TRL under
accelerate and torchtune, catalog shapes with random weights, bf16, full fine-tune and
LoRA, with and without gradient checkpointing, packed and not) is replayed: each case's
spec is rebuilt as the bench built it, priced by the estimator, and compared with the live
tensor bytes the run's dispatcher saw at its peak step phase, in total (the estimate less
its ``overhead``, which prices what only a GPU has: the CUDA context and the caching
allocator's slack) and term by term. No training here: the test reads the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.gpu_bench import RESULTS, cpu_bench_module, cpu_case_job, recorded

TOTAL_BAND = 0.10
"""Largest relative error of the estimate's total against the measured peak."""
TERM_BAND = 0.15
"""Largest relative error of one term against its measured counterpart ..."""
SMALL = 0.02
"""... or, for terms too small to hold to a relative band, this share of the peak."""
GIB = float(1 << 30)

FILES = sorted(RESULTS.glob("cpu_memory-*.json"))
CASES = [(path, r["case"]) for path in FILES for r in recorded(path)["results"]
         if r.get("exit") == 0 and r.get("processes")]


def test_there_are_recorded_runs() -> None:
    assert len(CASES) >= 8, FILES


def _case(path: Path, case: str) -> tuple[dict[str, Any], dict[str, Any]]:
    report = recorded(path)
    return report, next(r for r in report["results"] if r["case"] == case)


@pytest.mark.parametrize("path,case", CASES, ids=[f"{p.stem}-{c}" for p, c in CASES])
def test_estimate_within_band_of_the_measured_peak(path: Path, case: str) -> None:
    report, result = _case(path, case)
    memory = cpu_case_job(report, result).memory
    measured = cpu_bench_module().measured_terms(result)
    peak = measured["peak"] / GIB
    total = memory.total_gib - memory.overhead_gib
    assert abs(total - peak) / peak <= TOTAL_BAND, (
        f"{case}: estimate {total:.3f} GiB, measured {peak:.3f} GiB at the "
        f"{measured['phase']} ({100 * (total - peak) / peak:+.1f}%): {memory}")


@pytest.mark.slow
@pytest.mark.parametrize("path,case", CASES, ids=[f"{p.stem}-{c}" for p, c in CASES])
@pytest.mark.parametrize("term", ["weights", "optimizer", "gradients", "activations", "logits"])
def test_each_term_within_band_of_its_measurement(path: Path, case: str, term: str) -> None:
    report, result = _case(path, case)
    memory = cpu_case_job(report, result).memory
    measured = cpu_bench_module().measured_terms(result)
    got = getattr(memory, f"{term}_gib")
    want = measured[term] / GIB
    slack = max(TERM_BAND * want, SMALL * measured["peak"] / GIB)
    assert abs(got - want) <= slack, (
        f"{case} {term}: estimate {got:.3f} GiB, measured {want:.3f} GiB "
        f"(peak {measured['peak'] / GIB:.3f} at the {measured['phase']})")
