"""A run's resource use: the running min / avg / max (``reconciler.usage.Span``), the
sampler's process tree and summary (``local/sampler.py``, on a real child process), the
checked reading of ``usage.json`` (hostile files give no values, never a traceback) and its
rows in ``output`` / ``output --compare``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ftspec.cli.render_usage import usage_cells, usage_rows
from ftspec.reconciler.local.sampler import Sampler, tree
from ftspec.reconciler.local.supervise import USAGE_FILE, read_json, write_json
from ftspec.reconciler.usage import Span, parse_usage
from ftspec.spec.safe_files import SafeDir


def test_span_keeps_min_max_and_the_time_weighted_mean() -> None:
    span = Span()
    assert span.to_json() is None  # no sample: no figure, not zeros
    span.add(10.0, 1.0)
    span.add(40.0, 2.0)
    span.add(math.nan, 1.0)  # skipped
    span.add(99.0, 0.0)  # held for no time: skipped
    span.add(math.inf, 1.0)
    assert span.to_json() == {"min": 10.0, "avg": 30.0, "max": 40.0}


def test_tree_is_the_root_and_its_descendants_only() -> None:
    parents = {1: 0, 10: 1, 11: 10, 12: 11, 20: 1, 13: 10}
    assert tree(10, parents) == {10, 11, 12, 13}
    assert tree(12, parents) == {12}
    assert tree(99, parents) == set()  # gone: nothing to sample


SPIN = ("import subprocess, sys, time\n"
        "kid = subprocess.Popen([sys.executable, '-c', 'x = bytearray(64 << 20)\\n"
        "import time; t = time.process_time()\\nwhile time.process_time() - t < 1.5: pass'])\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 1.5: pass\n"
        "kid.wait()\n")


@pytest.mark.slow
def test_sampler_measures_a_real_process_tree_and_its_summary_parses_back(
        tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", SPIN])
    sampler = Sampler(child.pid, period=0.2).start()
    assert child.wait(timeout=60) == 0
    summary = sampler.stop()
    assert summary["samples"] >= 2 and summary["cores"] >= 1
    cpu, rss = summary["cpu_utilization_percent"], summary["rss_bytes"]
    assert 0 < cpu["avg"] <= cpu["max"] and cpu["min"] <= cpu["avg"]
    assert rss["max"] > 64 << 20  # the grandchild's buffer is in the tree's RSS
    assert 0 < summary["memory_utilization_percent"]["max"] <= 100
    assert summary["gpu"]["unavailable"].startswith("no GPU")
    with SafeDir.open(tmp_path) as run:
        write_json(run, USAGE_FILE, summary)
        assert parse_usage(read_json(run, USAGE_FILE)) == summary


GOOD: dict[str, Any] = {
    "period_s": 1.0, "samples": 30, "cores": 2, "memory_total_bytes": 8 << 30,
    "cpu_utilization_percent": {"min": 0.0, "avg": 80.5, "max": 99.0},
    "rss_bytes": {"min": 1e8, "avg": 2e8, "max": 3e8},
    "memory_utilization_percent": {"min": 1.0, "avg": 2.5, "max": 3.0},
    "gpu": {"devices": [{"index": 0, "name": "H200", "memory_total_bytes": 140 << 30,
                         "compute_utilization_percent": {"min": 0, "avg": 50, "max": 100},
                         "power_watts": {"min": 80, "avg": 400, "max": 690}}]},
}


@pytest.mark.parametrize("data", [
    None, [], "x", {}, {"cpu_utilization_percent": "high"},
    {"cpu_utilization_percent": {"min": 5, "avg": 1, "max": 9}},  # avg below min
    {"cpu_utilization_percent": {"min": -1, "avg": 1, "max": 9}},
    {"rss_bytes": {"min": True, "avg": 1, "max": 2}},
    {"rss_bytes": {"min": 1, "avg": 1, "max": 1e300}},
    {"rss_bytes": {"min": 1, "avg": 1}},
    {"gpu": {"devices": "all"}}, {"gpu": {"devices": [{"index": -1}]}},
    {"gpu": {"unavailable": 3}}, {"gpu": {"devices": [{"index": 0}] * 65}},
    {"samples": 3, "cores": 2},  # counts alone are no figures
])
def test_malformed_summaries_give_no_values(data: Any) -> None:
    assert parse_usage(data) is None


def test_only_the_fields_that_pass_their_checks_are_kept() -> None:
    assert parse_usage(GOOD) == GOOD
    bad = json.loads(json.dumps(GOOD))
    bad["cores"] = "two"
    bad["rss_bytes"]["max"] = -5
    bad["extra"] = {"anything": 1}
    bad["gpu"]["devices"][0]["name"] = "x" * 10_000
    bad["gpu"]["devices"][0]["power_watts"] = {"min": 1, "avg": 2, "max": "3"}
    bad["gpu"]["devices"].append({"index": "1"})
    got = parse_usage(bad)
    assert got is not None
    assert set(got) == {"period_s", "samples", "memory_total_bytes", "cpu_utilization_percent",
                        "memory_utilization_percent", "gpu"}
    (device,) = got["gpu"]["devices"]
    assert len(device["name"]) == 200 and "power_watts" not in device


def test_hostile_files_read_back_give_no_values(tmp_path: Path) -> None:
    for text in ("", "{", "[1]", '{"cpu_utilization_percent": NaN}', "1" * 100_000,
                 "[" * 100_000, '{"rss_bytes": {"min": 1e999, "avg": 1, "max": 1}}'):
        (tmp_path / USAGE_FILE).write_text(text)
        with SafeDir.open(tmp_path) as run:
            assert parse_usage(read_json(run, USAGE_FILE)) is None, text[:40]


def test_output_rows_and_compare_cells() -> None:
    rows = dict(usage_rows(GOOD))
    assert rows["cpu_utilization_per_core"] == "min 0.0% / avg 80.5% / max 99.0% (of 2 cores)"
    assert rows["memory_rss"] == "min 95 MiB / avg 191 MiB / max 286 MiB (30 samples)"
    assert rows["memory_utilization"] == "min 1.0% / avg 2.5% / max 3.0% of 8.0 GiB"
    assert rows["gpu0"] == "H200" and rows["gpu0_power"] == "min 80 W / avg 400 W / max 690 W"
    assert usage_cells(GOOD) == ["80.5%", "286 MiB", "50.0%"]
    none = {**GOOD, "gpu": {"unavailable": "no GPU: \x1b[31mred"}}
    assert dict(usage_rows(none))["gpu"] == "unavailable: no GPU: \\x1b[31mred"
    assert usage_cells(none)[2] == "n/a"


class _FakeNvml:
    """pynvml's calls the sampler makes, for one device (no GPU here to read)."""

    class NVMLError(Exception):
        pass

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"NVIDIA H200"

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        return type("Mem", (), {"total": 100 << 30, "used": 25 << 30})()

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Any:
        return type("Util", (), {"gpu": 70})()

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        raise self.NVMLError("Not Supported")  # a device without power readings


def test_gpu_figures_through_nvml_and_a_device_without_power(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ftspec.reconciler.local.sampler import _Gpus

    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml())
    gpus = _Gpus()
    gpus.sample(1.0)
    gpus.sample(1.0)
    summary = gpus.summary()
    (device,) = summary["devices"]
    assert device["name"] == "NVIDIA H200" and device["memory_total_bytes"] == 100 << 30
    assert device["compute_utilization_percent"] == {"min": 70.0, "avg": 70.0, "max": 70.0}
    assert device["memory_used_bytes"] == {"min": 25 << 30, "avg": 25 << 30, "max": 25 << 30}
    assert device["memory_utilization_percent"]["max"] == 25.0
    assert "power_watts" not in device  # never read: left out, not zero
    assert parse_usage({"gpu": summary}) == {"gpu": summary}
    assert usage_cells({"gpu": summary})[2] == "70.0%"


def test_nvml_that_fails_to_start_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from ftspec.reconciler.local.sampler import _Gpus

    class Broken(_FakeNvml):
        def nvmlInit(self) -> None:
            raise RuntimeError("driver not loaded")

    monkeypatch.setitem(sys.modules, "pynvml", Broken())
    assert _Gpus().summary() == {
        "unavailable": "no GPU: NVML could not be read (RuntimeError: driver not loaded)"}


def test_a_link_in_place_of_the_summary_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.json"
    victim.write_text(json.dumps(GOOD))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / USAGE_FILE).symlink_to(victim)
    with SafeDir.open(tmp_path / "run") as run:
        assert parse_usage(read_json(run, USAGE_FILE)) is None


@pytest.mark.slow
def test_the_supervisor_writes_the_summary_before_the_exit_record(tmp_path: Path) -> None:
    """The real supervisor (detached, as the backend starts it) on a short CPU-bound child:
    once ``exit.json`` exists, ``usage.json`` is there and parses with CPU and RSS."""
    import time

    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    subprocess.run([sys.executable, "-m", "ftspec.reconciler.local.supervise", str(run), "--",
                    sys.executable, "-c", SPIN], check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (run / "exit.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    with SafeDir.open(run) as folder:
        assert (read_json(folder, "exit.json") or {}).get("returncode") == 0
        got = parse_usage(read_json(folder, USAGE_FILE))
    assert got is not None and got["samples"] >= 1
    assert got["cpu_utilization_percent"]["max"] > 0 and got["rss_bytes"]["max"] > 64 << 20
