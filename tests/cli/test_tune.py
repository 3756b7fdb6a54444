"""``ftspec tune``: the fastest batch / checkpointing / sharding settings that fit, written
as an overlay that keeps the global batch and never touches learning rate, data or method;
a bad spec is a located error (a CPU spec: tests/cli/test_tune_cpu.py). In-process, no
training, no timing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.cli_run import run, run_json

ROOT = Path(__file__).resolve().parents[2]
KUBE = str(ROOT / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml")
SEARCHED = {"training": {"micro_batch_size", "gradient_accumulation_steps",
                         "gradient_checkpointing"}, "distributed": {"strategy"}}


def _tune(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    return run_json(capsys, "tune", *args)


def _explain(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    return run_json(capsys, "explain", *args)


def test_a_gpu_example_gets_a_faster_overlay_that_keeps_what_is_learned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overlay = tmp_path / "tuned.yaml"
    data = _tune(capsys, KUBE, "-o", str(overlay))
    assert data["tuned"] is True and data["overlay"] == str(overlay)
    choice, written = data["choice"], data["written"]
    assert choice["fits"] and choice["tokens_per_s_per_device"] >= \
        written["tokens_per_s_per_device"]
    assert choice["micro_batch_size"] * choice["gradient_accumulation_steps"] * 4 == 32
    text = overlay.read_text()
    assert text.startswith("# ftspec tune ") and f"+{100 * data['gain']:.1f}%" in text
    doc = yaml.safe_load(text)
    for section, keys in doc.items():
        assert set(keys) <= SEARCHED[section], doc
    before, after = _explain(capsys, KUBE), _explain(capsys, KUBE, "-f", str(overlay))
    for key in ("learning_rate", "global_batch_size", "epochs", "total_steps", "lora"):
        assert after["derived"][key] == before["derived"][key], key
    assert after["derived"]["micro_batch_size"] == choice["micro_batch_size"]
    assert after["time"]["terms"]["tokens_per_s_per_device"] == pytest.approx(
        choice["tokens_per_s_per_device"], rel=1e-3)
    assert after["memory"]["total_gib"] == pytest.approx(choice["memory_gib"], abs=0.01)


def test_the_tuned_spec_is_not_tuned_again(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    overlay, again = tmp_path / "tuned.yaml", tmp_path / "again.yaml"
    _tune(capsys, KUBE, "-o", str(overlay))
    code, out, _ = run(capsys, "tune", KUBE, "-f", str(overlay), "-o", str(again))
    assert code == 0 and "nothing beats the spec as written" in out, out
    assert not again.exists()


def test_a_faster_candidate_over_the_memory_limit_is_never_chosen(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # half the memory left free: the fastest settings (micro batch 8, no checkpointing,
    # ~56 GiB) no longer fit, and the choice is the fastest of those that do
    data = _tune(capsys, KUBE, "--margin", "0.5", "-o", str(tmp_path / "t.yaml"))
    limit = data["limit_gib"]
    assert limit == pytest.approx(40.0)
    choice = data["choice"]
    assert choice["memory_gib"] <= limit
    over = [c for c in data["candidates"] if c["memory_gib"] is not None and not c["fits"]]
    assert over and all(c["memory_gib"] > limit for c in over)
    assert max(c["tokens_per_s_per_device"] for c in over) > choice["tokens_per_s_per_device"]
    fitting = [c["tokens_per_s_per_device"] for c in data["candidates"] if c["fits"]]
    assert choice["tokens_per_s_per_device"] == max(fitting)


def test_a_refused_candidate_is_listed_and_never_chosen(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _tune(capsys, KUBE, "-o", str(tmp_path / "t.yaml"))
    refused = [c for c in data["candidates"] if c["refused"]]
    assert refused and {c["strategy"] for c in refused} == {"ddp"}
    assert "torchtune" in refused[0]["refused"] and data["choice"]["strategy"] == "fsdp"


def test_a_bad_spec_is_a_located_error(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(Path(KUBE).read_text().replace("micro_batch_size: 4",
                                                   "micro_batch_size: many"))
    code, _, err = run(capsys, "tune", str(spec), "-o", str(tmp_path / "t.yaml"))
    line = next(n for n, text in enumerate(spec.read_text().splitlines(), 1)
                if "micro_batch_size: many" in text)
    assert code == 1 and f"bad.yaml:{line}:" in err and "Traceback" not in err, err
    assert not (tmp_path / "t.yaml").exists()


def test_a_written_spec_the_launcher_refuses_is_an_error_not_a_baseline(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # torchtune's distributed recipes refuse DDP when the artifacts are rendered, after
    # validation: tune compiles as far as compile does and stops with that error
    out = tmp_path / "t.yaml"
    code, _, err = run(capsys, "tune", KUBE, "--set", "distributed.strategy=ddp", "-o", str(out))
    assert code == 1 and "--set[0]:1:" in err and "strategy ddp is not available" in err, err
    assert not out.exists()


@pytest.mark.slow
def test_an_accelerate_example_searches_both_strategies(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(ROOT / "examples" / "sfttrainer-lora-benchmark.yaml")  # 2 GPUs, DDP, global 64
    overlay = tmp_path / "t.yaml"
    data = _tune(capsys, spec, "-o", str(overlay))
    cands = data["candidates"]
    assert {c["strategy"] for c in cands} == {"ddp", "fsdp"}
    assert not [c for c in cands if c["refused"]]
    assert {c["micro_batch_size"] * c["gradient_accumulation_steps"] for c in cands} == {32}
    choice = data["choice"]
    assert choice["fits"] and choice["tokens_per_s_per_device"] >= \
        data["written"]["tokens_per_s_per_device"]
    after = _explain(capsys, spec, "-f", str(overlay))
    assert after["derived"]["global_batch_size"] == 64
    assert after["derived"]["learning_rate"] == _explain(capsys, spec)["derived"]["learning_rate"]
