"""bench/gpu_memory.py's and bench/cpu_memory.py's specs, rebuilt from their recorded
results (the scripts are loaded from their files: bench/ is no package)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ftspec.spec.ir import Job

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def bench_module() -> ModuleType:
    return _load("ftspec_bench_gpu_memory", "gpu_memory.py")


def _load(name: str, file: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def recorded(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def case_job(report: dict[str, Any], result: dict[str, Any]) -> Job:
    """The Job ``ftspec explain`` priced for one recorded case, built as the bench built it
    (paths under a work folder that need not exist: compiling reads no file)."""
    from ftspec.compiler.build import build_job
    from ftspec.spec.validate import spec_from_data

    bench = bench_module()
    work = Path("/tmp/ftspec-gpu-bench")
    assets = bench.Assets(work / "model", work / "rows.jsonl", report["rows"],
                          tuple(report["row_tokens"]))
    data = bench.case_spec(result["case"], assets, work, tiny=False, batch=report["batch"],
                           seq=report["seq"], **bench.report_options(report))
    return build_job(spec_from_data(data))


def cpu_bench_module() -> ModuleType:
    """bench/cpu_memory.py, loaded from its file (it imports its sibling gpu_memory)."""
    return _load("ftspec_bench_cpu_memory", "cpu_memory.py")


def cpu_case_job(report: dict[str, Any], result: dict[str, Any]) -> Job:
    """The Job ``ftspec explain`` priced for one case of bench/cpu_memory.py's table."""
    job: Job = cpu_bench_module().case_job(report, result)
    return job
