"""The throughput model's terms (compiler/throughput.py) and the time and cost built on them
(compiler/time_cost.py, compiler/pricing.py), against hand computations. No timing is
asserted: only the model's arithmetic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.compiler.pricing import load_pricing
from ftspec.compiler.throughput import flops_per_token, hardware_of, predict
from ftspec.compiler.time_cost import estimate_time, short_line
from ftspec.spec.catalog.accelerator_peaks import PEAKS
from ftspec.spec.catalog.accelerators import ACCELERATORS
from ftspec.spec.diagnostics import SpecError
from ftspec.spec.ir import Job
from ftspec.spec.validate import spec_from_data
from helpers.specdata import with_keys

SEQ = 2048


def job(**over: Any) -> Job:
    """Llama 3.2 1B's shapes (16 layers, hidden 2048, 32 heads of 64, tied embeddings)."""
    data: dict[str, Any] = {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": "t"},
        "model": {"uri": "hf://meta-llama/Llama-3.2-1B", "family": "llama3_2-1b"},
        "data": {"train": {"uri": "hf://tatsu-lab/alpaca", "num_examples": 52002},
                 "max_seq_len": SEQ},
        "method": {"kind": "full"},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "learning_rate": 2e-5},
        "resources": {"gpus_per_node": 1, "accelerator": "nvidia-h100-80gb"},
        "launcher": "accelerate",
    }
    with_keys(data, over)
    return build_job(spec_from_data(data))


LORA = {"kind": "lora", "lora": {"rank": 8, "alpha": 16,
                                 "target_modules": ["q_proj", "v_proj"]}}


def test_full_fine_tune_flops_per_token_by_hand() -> None:
    j = job()
    n = j.model.params_b * 1e9  # tied: the embedding is the head's matmul
    assert j.model.tied_embeddings and j.model.num_layers == 16
    d = 32 * 64
    by_hand = 6 * n + 12 * 16 * d * SEQ
    assert flops_per_token(j).total == pytest.approx(by_hand, rel=1e-12)
    assert flops_per_token(j).attention == pytest.approx(12 * 16 * d * SEQ)


def test_lora_drops_the_weight_gradients_and_adds_its_adapters() -> None:
    full, lora = flops_per_token(job()), flops_per_token(job(method=LORA))
    assert lora.total < full.total
    n = job().model.params_b * 1e9
    # q_proj 2048 -> 2048, v_proj 2048 -> 512, rank 8, 16 layers
    adapters = 16 * 8 * ((2048 + 2048) + (2048 + 512))
    by_hand = 4 * n + 6 * adapters + 12 * 16 * 2048 * SEQ
    assert lora.total == pytest.approx(by_hand, rel=1e-12)


def test_checkpointing_adds_one_forward() -> None:
    plain = flops_per_token(job())
    ckpt = flops_per_token(job(training__gradient_checkpointing=True))
    assert plain.recompute == 0
    assert ckpt.total == pytest.approx(plain.total + plain.forward)


def test_more_gpus_take_less_time_at_the_same_global_batch() -> None:
    one, _ = estimate_time(job(training__global_batch_size=8, training__micro_batch_size=1))
    eight, _ = estimate_time(job(training__global_batch_size=8, training__micro_batch_size=1,
                                 resources__gpus_per_node=8, distributed__strategy="ddp"))
    assert one is not None and eight is not None
    assert eight.steps == one.steps
    assert eight.seconds < one.seconds
    assert eight.throughput.comm_s > 0 == one.throughput.comm_s


def test_a_price_gives_a_cost_and_no_price_none() -> None:
    priced, _ = estimate_time(job(), {"nvidia-h100-80gb": 2.5})
    unpriced, _ = estimate_time(job(), {"nvidia-a100-80gb": 1.0})
    assert priced is not None and unpriced is not None
    assert priced.cost == pytest.approx(priced.device_hours * 2.5)
    assert unpriced.cost is None and unpriced.to_json()["cost"] is None
    assert "cost ~" in short_line([priced]) and "cost" not in short_line([unpriced])
    low, high = priced.to_json()["cost_range"]
    assert low < priced.cost < high


def test_device_hours_count_every_device() -> None:
    est, _ = estimate_time(job(resources__gpus_per_node=4, distributed__strategy="ddp",
                               training__micro_batch_size=2))
    assert est is not None and est.devices == 4
    assert est.device_hours == pytest.approx(est.seconds * 4 / 3600)


def test_a_sweep_line_sums_its_runs() -> None:
    a, _ = estimate_time(job())
    b, _ = estimate_time(job(method=LORA))
    assert a is not None and b is not None
    line = short_line([a, b])
    assert "for 2 runs in turn" in line
    assert f"{a.device_hours + b.device_hours:.2g} device-hours" in line


def test_no_estimate_without_a_peak() -> None:
    est, why = estimate_time(job(resources={"gpus_per_node": None, "gpus": None,
                                            "processes_per_node": 1}))
    assert est is None and "CPU" in why
    est, why = estimate_time(job(resources__accelerator="nvidia-a10g"))
    assert est is None and "nvidia-a10g" in why


def test_fp32_uses_the_fp32_peak() -> None:
    bf16 = hardware_of(job())
    fp32 = hardware_of(job(model__dtype="fp32"))
    assert bf16 is not None and fp32 is not None
    assert bf16.flops == PEAKS["nvidia-h100-80gb"].tflops_16bit * 1e12  # type: ignore[operator]
    assert fp32.flops == PEAKS["nvidia-h100-80gb"].tflops_fp32 * 1e12  # type: ignore[operator]


def test_efficiency_scales_the_step() -> None:
    j = job()
    hw = hardware_of(j)
    assert hw is not None
    half, whole = predict(j, hw, 0.5), predict(j, hw, 1.0)
    assert half.step_s == pytest.approx(2 * whole.step_s)


def test_every_accelerator_has_a_peak_row_with_a_source() -> None:
    assert set(PEAKS) == set(ACCELERATORS)
    assert all(p.source for p in PEAKS.values())


def test_pricing_file_is_read_and_wrong_entries_are_located(tmp_path: Path) -> None:
    good = tmp_path / "prices.yaml"
    good.write_text("nvidia-h100-80gb: 2.49\nnvidia-l4: 1\n")
    assert load_pricing(good) == {"nvidia-h100-80gb": 2.49, "nvidia-l4": 1.0}
    bad = tmp_path / "bad.yaml"
    bad.write_text("nvidia-h100-80gb: cheap\nnvidia-h900: 3\n")
    with pytest.raises(SpecError) as err:
        load_pricing(bad)
    lines = [d.format() for d in err.value.diagnostics]
    assert any(f"{bad}:1:19" in line and "must be a number" in line for line in lines), lines
    assert any(f"{bad}:2:1" in line and "unknown accelerator" in line for line in lines), lines


def test_unknown_steps_give_no_time_but_explain_keeps_the_throughput() -> None:
    from ftspec.compiler.explain import explain_data
    from ftspec.compiler.throughput_fit import efficiency_for

    j = job(data={"train": {"uri": "hf://tatsu-lab/alpaca"}, "max_seq_len": SEQ})
    est, why = estimate_time(j)
    assert est is None and "steps is unknown" in why
    time = explain_data(j)["time"]
    assert time["unpredicted"] == why
    hw = hardware_of(j)
    assert hw is not None
    assert time["tokens_per_s_per_device"] == round(predict(j, hw, efficiency_for("hf")).tokens_per_s, 1)


def test_a_band_is_written_in_its_centres_unit() -> None:
    from ftspec.compiler.time_cost import band_text

    assert band_text(46 * 60, 0.11) == "~46 min (41–51 min)"
    assert band_text(5500, 0.11) == "~1.5 h (1.4–1.7 h)"
    assert band_text(60, 0.5) == "~60 s (30–90 s)"
