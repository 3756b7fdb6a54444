"""The throughput fit's constants (compiler/throughput_fit.py) against the runs they were
fitted on: each recorded H100 run (bench/results/gpu_memory-*.json, the tokens/s it
measured) is rebuilt as the bench built it, and the fit and its leave-one-out error are
recomputed from them; the same for the CPU runs of bench/results/throughput-2026-11-28.json
(each against the probe taken before it). A change to the throughput model that moves the
fit fails here until the constants are refitted (bench/throughput.py prints them)."""

from __future__ import annotations

import importlib.util

import pytest
from ftspec.compiler.throughput import hardware_of
from ftspec.compiler.throughput_fit import (
    CPU_EFFICIENCY,
    CPU_LOO_ERROR,
    GPU_EFFICIENCY,
    GPU_LOO_ERROR,
    Measured,
    fit,
    leave_one_out,
    measured_run,
)
from helpers.gpu_bench import RESULTS, case_job, recorded

FILE = RESULTS / "gpu_memory-h100-2026-11-24.json"


def runs() -> list[Measured]:
    report = recorded(FILE)
    out = []
    for result in report["results"]:
        job = case_job(report, result)
        hardware = hardware_of(job)
        assert hardware is not None, result["case"]
        out.append(measured_run(result["case"], job, hardware, result["tokens_per_s"]))
    return out


def test_the_kept_efficiencies_are_the_fit_of_the_recorded_runs() -> None:
    fitted = fit(runs())
    assert set(fitted) == set(GPU_EFFICIENCY)
    for family, value in fitted.items():
        assert GPU_EFFICIENCY[family] == pytest.approx(value, abs=5e-4), family


def test_the_band_covers_every_leave_one_out_error() -> None:
    held = leave_one_out(runs())
    assert len(held) == 8
    worst = max(abs(h.error) for h in held)
    assert worst <= GPU_LOO_ERROR < worst + 0.01


def test_leave_one_out_fits_without_the_held_run() -> None:
    made = [Measured("a", "f", 1.0, 0.0, 100.0, 50.0), Measured("b", "f", 1.0, 0.0, 100.0, 25.0),
            Measured("c", "g", 1.0, 0.0, 100.0, 10.0)]
    held = {h.case: h for h in leave_one_out(made)}
    assert set(held) == {"a", "b"}  # c is alone in its family: nothing to fit it on
    assert held["a"].efficiency == pytest.approx(0.25)  # b's: 1 s roofline over 4 s
    assert held["a"].error == pytest.approx(25.0 / 50.0 - 1)


def test_the_kept_cpu_efficiency_and_band_are_the_fit_of_the_recorded_cpu_runs() -> None:
    # bench/throughput.py's CPU runs (each with the probe taken before it), priced again by
    # the installed model as the bench prices them (--cpu-from)
    spec = importlib.util.spec_from_file_location("ftspec_bench_throughput",
                                                  RESULTS.parent / "throughput.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    runs = bench.recorded_cpu_runs(RESULTS / "throughput-2026-11-28.json")
    assert len(runs) == 5
    assert fit(runs) == {"hf": pytest.approx(CPU_EFFICIENCY, abs=5e-4)}
    worst = max(abs(h.error) for h in leave_one_out(runs))
    assert worst <= CPU_LOO_ERROR < worst + 0.01
