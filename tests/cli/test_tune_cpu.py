"""``ftspec tune`` of a CPU spec: priced on this machine's CPU peak, given (``--cpu-peak``)
or probed and kept in the cache. The probe is replaced by fixed figures in every test (it
counts its calls): nothing is timed, the outcome is the same on any machine under any load."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.compiler import cpu_peak
from ftspec.compiler.pipeline import SpecInput, compile_spec
from ftspec.compiler.throughput import Hardware, predict
from ftspec.compiler.throughput_fit import CPU_EFFICIENCY
from ftspec.reconciler.local.capacity import GIB, Machine
from helpers.cli_run import run, run_json

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "examples" / "tiny-local.yaml")
SLOW = ("--set", "training.micro_batch_size=1", "--set", "training.gradient_accumulation_steps=4",
        "--set", "training.gradient_checkpointing=true")
"""The tiny example at the same global batch of 4, written slower: micro batch 1 x 4
accumulated, activation checkpointing on."""
SEARCHED = {"training": {"micro_batch_size", "gradient_accumulation_steps",
                         "gradient_checkpointing"}, "distributed": {"strategy"}}
PROBED = (20e9, 5e9)


@pytest.fixture(autouse=True)
def probes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The dtypes the probe was asked for; the probe returns ``PROBED``."""
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    calls: list[str] = []

    def fixed(dtype: str) -> tuple[float, float]:
        calls.append(dtype)
        return PROBED

    monkeypatch.setattr(cpu_peak, "probe", fixed)
    return calls


def _tune(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    return run_json(capsys, "tune", *args)


def _explain(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    return run_json(capsys, "explain", *args)


def test_the_tiny_example_as_shipped_is_already_the_fastest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], probes: list[str]) -> None:
    overlay = tmp_path / "t.yaml"
    data = _tune(capsys, TINY, "--cpu-peak", "20,5", "-o", str(overlay))
    assert data["tuned"] is False and data["choice"] is None and not overlay.exists()
    assert data["cpu_peak"] == {"gflops": 20.0, "memory_gbps": 5.0, "dtype": "fp32",
                                "source": "given", "measured_at": None}
    assert probes == []  # a given peak is not probed
    cands = data["candidates"]
    assert {(c["micro_batch_size"], c["gradient_accumulation_steps"]) for c in cands} == \
        {(1, 4), (2, 2), (4, 1)}
    assert len(cands) == 6 and all(c["fits"] for c in cands)
    written = data["written"]
    assert (written["micro_batch_size"], written["gradient_checkpointing"]) == (4, False)
    assert written["tokens_per_s_per_device"] == max(c["tokens_per_s_per_device"] for c in cands)
    code, out, _ = run(capsys, "tune", TINY, "--cpu-peak", "20,5", "-o", str(overlay))
    assert code == 0 and "nothing beats the spec as written" in out, out
    assert "CPU peak: 20.0 GFLOP/s fp32, 5.0 GB/s (given by --cpu-peak)" in out


def _written(tmp_path: Path) -> str:
    """``SLOW`` as an overlay file (a ``--set`` would win over the tuned overlay)."""
    written = tmp_path / "written.yaml"
    written.write_text("training: {micro_batch_size: 1, gradient_accumulation_steps: 4, "
                       "gradient_checkpointing: true}\n")
    return str(written)


def _checkpointing(capsys: pytest.CaptureFixture[str], *args: str) -> bool:
    """torchtune's ``enable_activation_checkpointing`` in the compiled config."""
    code, out, err = run(capsys, "compile", TINY, *args, "--target", "torchtune")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("enable_activation_checkpointing:"))
    return line.split(":", 1)[1].strip() == "true"


def test_a_checkpointed_spec_is_tuned_to_no_checkpointing_at_the_same_batch(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overlay, written = tmp_path / "t.yaml", _written(tmp_path)
    data = _tune(capsys, TINY, "-f", written, "--cpu-peak", "20,5", "-o", str(overlay))
    assert data["tuned"] is True and data["overlay"] == str(overlay)
    assert data["shadowed_by_set"] == []
    choice = data["choice"]
    # the batch pairs are predicted equally fast (the tiny model is compute-bound at this
    # peak): on a CPU the largest micro batch is taken
    assert (choice["micro_batch_size"], choice["gradient_accumulation_steps"],
            choice["gradient_checkpointing"]) == (4, 1, False)
    ties = [c for c in data["candidates"] if not c["gradient_checkpointing"]]
    assert len({c["tokens_per_s_per_device"] for c in ties}) == 1, ties
    # the gain is the step the model prices on the given peak without the recompute (the
    # forward pass again) and LoRA's extra adapter traffic under checkpointing
    given = Hardware(20e9, 5e9, 1.0, "cpu")
    jobs = [compile_spec(SpecInput(Path(TINY), (), sets), "artifacts").job
            for sets in ((), ("training.gradient_checkpointing=true",))]
    plain, ckpt = (predict(j, given, CPU_EFFICIENCY) for j in jobs if j is not None)
    assert ckpt.flops.recompute > 0 and ckpt.adapter_s > plain.adapter_s
    assert data["gain"] == pytest.approx(ckpt.step_s / plain.step_s - 1, abs=2e-3)
    assert data["written"]["tokens_per_s_per_device"] == pytest.approx(ckpt.tokens_per_s,
                                                                       rel=1e-3)
    text = overlay.read_text()
    assert text.startswith("# ftspec tune tiny-local.yaml: +")
    assert "# CPU figures: peak 20.0 GFLOP/s fp32, 5.0 GB/s (given by --cpu-peak)" in text
    assert "leave-one-out errors up to 53%" in text and "(this machine's memory)" in text
    doc = yaml.safe_load(text)
    for section, keys in doc.items():
        assert set(keys) <= SEARCHED[section], doc
    assert doc["training"]["gradient_checkpointing"] is False
    before = _explain(capsys, TINY, "-f", written)
    after = _explain(capsys, TINY, "-f", written, "-f", str(overlay))
    for key in ("learning_rate", "global_batch_size", "epochs", "total_steps", "lora"):
        assert after["derived"][key] == before["derived"][key], key
    assert (before["derived"]["micro_batch_size"], after["derived"]["micro_batch_size"]) == (1, 4)
    assert "the largest micro batch" in text
    assert _checkpointing(capsys, "-f", written)
    assert not _checkpointing(capsys, "-f", written, "-f", str(overlay))


def test_a_set_value_the_overlay_changes_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --set wins over every -f: tuned with --set, the same --set at apply undoes the overlay
    overlay = tmp_path / "t.yaml"
    data = _tune(capsys, TINY, *SLOW, "--cpu-peak", "20,5", "-o", str(overlay))
    assert data["shadowed_by_set"] == ["training.gradient_accumulation_steps",
                                       "training.gradient_checkpointing",
                                       "training.micro_batch_size"]
    assert _checkpointing(capsys, *SLOW, "-f", str(overlay))  # why it is named
    code, _, err = run(capsys, "tune", TINY, "--set", "training.gradient_checkpointing=true",
                       "--cpu-peak", "20,5", "-o", str(overlay))
    assert code == 0 and "note: --set wins over -f: training.gradient_checkpointing " in err


def test_the_choice_does_not_depend_on_the_peaks_scale(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slow = _tune(capsys, TINY, *SLOW, "--cpu-peak", "20,5", "-o", str(tmp_path / "a.yaml"))
    fast = _tune(capsys, TINY, *SLOW, "--cpu-peak", "200,50", "-o", str(tmp_path / "b.yaml"))
    assert {k: v for k, v in fast["choice"].items() if k != "tokens_per_s_per_device"} == \
        {k: v for k, v in slow["choice"].items() if k != "tokens_per_s_per_device"}
    assert fast["gain"] == pytest.approx(slow["gain"], abs=1e-3)
    assert fast["written"]["tokens_per_s_per_device"] == pytest.approx(
        10 * slow["written"]["tokens_per_s_per_device"], rel=1e-3)


def test_the_probe_runs_once_and_its_peak_is_kept_privately(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], probes: list[str]) -> None:
    first = _tune(capsys, TINY, *SLOW, "-o", str(tmp_path / "a.yaml"))
    assert probes == ["fp32"] and first["cpu_peak"]["source"] == "probe"
    assert first["cpu_peak"]["gflops"] == 20.0 and first["cpu_peak"]["measured_at"]
    entries = list((tmp_path / "cache" / cpu_peak.KIND).iterdir())
    assert len(entries) == 1 and entries[0].stat().st_mode & 0o777 == 0o600
    again = _tune(capsys, TINY, *SLOW, "-o", str(tmp_path / "b.yaml"))
    assert probes == ["fp32"] and again["cpu_peak"]["source"] == "cache"
    assert again["cpu_peak"]["measured_at"] == first["cpu_peak"]["measured_at"]
    assert again["choice"] == first["choice"]
    fresh = _tune(capsys, TINY, *SLOW, "--cpu-probe", "-o", str(tmp_path / "c.yaml"))
    assert probes == ["fp32", "fp32"] and fresh["cpu_peak"]["source"] == "probe"
    assert "cached probe of this machine" in (tmp_path / "b.yaml").read_text()


def test_a_cached_peak_others_may_read_or_of_another_dtype_is_not_used(
        tmp_path: Path, probes: list[str]) -> None:
    folder = tmp_path / "cache" / cpu_peak.KIND
    folder.mkdir(parents=True, mode=0o700)
    entry = folder / cpu_peak.machine_key("fp32")
    entry.write_text(json.dumps({"flops": 1e12, "memory_bps": 1e11, "dtype": "fp32",
                                 "measured_at": "then"}))
    os.chmod(entry, 0o644)
    assert cpu_peak.measured_peak("fp32").source == "probe" and probes == ["fp32"]
    os.chmod(entry, 0o600)
    entry.write_text(json.dumps({"flops": 1e12, "memory_bps": 1e11, "dtype": "bf16",
                                 "measured_at": "then"}))
    peak = cpu_peak.measured_peak("fp32")
    assert (peak.source, peak.flops) == ("probe", PROBED[0]) and len(probes) == 2
    kept = cpu_peak.measured_peak("fp32")
    assert (kept.source, kept.flops, kept.memory_bps) == ("cache", *PROBED)


@pytest.mark.parametrize("flops", ["Infinity", "NaN", "-1e12", "0", "true", '"1e12"'])
def test_a_cached_peak_that_is_not_a_finite_positive_number_is_not_used(
        tmp_path: Path, probes: list[str], flops: str) -> None:
    folder = tmp_path / "cache" / cpu_peak.KIND
    folder.mkdir(parents=True, mode=0o700)
    entry = folder / cpu_peak.machine_key("fp32")
    entry.write_text(f'{{"flops": {flops}, "memory_bps": 1e11, "dtype": "fp32", '
                     '"measured_at": "then"}')
    os.chmod(entry, 0o600)
    peak = cpu_peak.measured_peak("fp32")
    assert (peak.source, peak.flops) == ("probe", PROBED[0]) and probes == ["fp32"]


def test_a_cpu_spec_that_runs_elsewhere_or_in_several_processes_is_not_tuned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], probes: list[str]) -> None:
    overlay = tmp_path / "t.yaml"
    ray = str(ROOT / "examples" / "hf-peft-smollm-135m-samsum.yaml")
    code, out, _ = run(capsys, "tune", ray, "--set", "resources.gpus_per_node=0",
                       "--set", "resources.accelerator=null", "-o", str(overlay))
    assert code == 0 and out.startswith("not tuned: a CPU run on deploy.target ray"), out
    data = _tune(capsys, TINY, "--set", "resources.processes_per_node=2",
                 "--set", "training.global_batch_size=8", "-o", str(overlay))
    assert data["tuned"] is False and "2 processes" in data["reason"]
    assert probes == [] and not overlay.exists()  # nothing measured for a job it cannot price


def test_a_machine_of_unknown_or_too_little_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = tmp_path / "t.yaml"
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls: cls(0, 2, 0)))
    data = _tune(capsys, TINY, *SLOW, "--cpu-peak", "20,5", "-o", str(overlay))
    assert data["tuned"] is False and "memory is unknown" in data["reason"]
    monkeypatch.setattr(Machine, "here", classmethod(lambda cls: cls(GIB // 2, 2, 0)))
    data = _tune(capsys, TINY, *SLOW, "--cpu-peak", "20,5", "-o", str(overlay))
    assert data["limit_gib"] == pytest.approx(0.45)
    assert data["tuned"] is False and not any(c["fits"] for c in data["candidates"])
    assert not overlay.exists()


@pytest.mark.parametrize("value", ["abc", "20", "0,5", "20,-1", "20,5,1", "nan,5"])
def test_a_bad_cpu_peak_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         value: str) -> None:
    overlay = tmp_path / "t.yaml"
    code, _, err = run(capsys, "tune", TINY, "--cpu-peak", value, "-o", str(overlay))
    assert code == 1 and "Invalid value for --cpu-peak" in err and "GFLOP/s and GB/s" in err
    assert "Traceback" not in err and not overlay.exists()
