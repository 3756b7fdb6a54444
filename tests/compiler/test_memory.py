"""Memory estimate against hand-computed figures and commonly published ones."""

from __future__ import annotations

from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.compiler.memory import fit_by_accelerator
from ftspec.spec.catalog.accelerators import ACCELERATORS
from ftspec.spec.ir import Job
from ftspec.spec.validate import spec_from_data
from helpers.jobs import make_job

GIB = 1 << 30


def job(**over: Any) -> Job:
    data: dict[str, Any] = {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": "m"},
        "model": {"uri": "hf://meta-llama/Llama-3.1-8B", "family": "llama3_1-8b"},
        "data": {"train": {"uri": "hf://tatsu-lab/alpaca", "num_examples": 52002},
                 "max_seq_len": 2048},
        "method": {"kind": "full"},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "learning_rate": 2e-5,
                     "gradient_checkpointing": True},
        "resources": {"gpus_per_node": 1, "accelerator": "nvidia-a100-80gb"},
        "launcher": "accelerate",
    }
    for key, value in over.items():
        node = data
        *parents, last = key.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return build_job(spec_from_data(data))


def test_full_8b_mixed_precision_needs_16_bytes_per_param() -> None:
    m = job().memory
    states = m.weights_gib + m.gradients_gib + m.optimizer_gib
    assert abs(states - 8.03e9 * 16 / GIB) < 0.1  # 2 + 2 + 8 + 4 bytes per parameter
    assert m.fits is False


def test_full_8b_fsdp_over_8_gpus_fits_80gb() -> None:
    m = job(resources__gpus_per_node=8, distributed__strategy="fsdp").memory
    assert abs(m.weights_gib + m.gradients_gib + m.optimizer_gib - 8.03e9 * 16 / 8 / GIB) < 0.1
    assert m.fits is True


def test_zero_stages_shard_progressively() -> None:
    totals = [job(resources__gpus_per_node=8, distributed__strategy="deepspeed",
                  distributed__deepspeed={"stage": s}).memory for s in (1, 2, 3)]
    assert totals[0].optimizer_gib < job(resources__gpus_per_node=8).memory.optimizer_gib
    assert totals[0].gradients_gib > totals[1].gradients_gib
    assert totals[1].weights_gib > totals[2].weights_gib
    off = job(resources__gpus_per_node=8, distributed__strategy="deepspeed",
              distributed__deepspeed={"stage": 3, "offload_optimizer": "cpu",
                                      "offload_params": "cpu"}).memory
    assert off.optimizer_gib == 0 and off.weights_gib < totals[2].weights_gib


def test_qlora_8b_fits_a_24gb_card_with_checkpointing() -> None:
    j = job(method={"kind": "qlora", "quantization": {"bits": 4}},
            resources__accelerator="nvidia-l4", launcher="torchtune",
            training__micro_batch_size=2, training__global_batch_size=8,
            training__loss="chunked_cross_entropy")
    m = j.memory
    assert m.weights_gib < 5.0  # ~0.52 bytes per parameter + fp32 adapters
    assert m.fits is True


def test_lora_trainable_params_hand_computed() -> None:
    # Llama-3.1-8B, r=8 on q and v: per layer 8*(4096+4096) + 8*(4096+1024), 32 layers
    j = job(method={"kind": "lora", "lora": {"rank": 8, "target_modules": ["q_proj", "v_proj"]}})
    assert abs(j.memory.trainable_params_b * 1e9 - 32 * 8 * (8192 + 5120)) < 1e3
    dora = job(method={"kind": "dora", "lora": {"rank": 8,
                                                "target_modules": ["q_proj", "v_proj"]}})
    assert dora.memory.trainable_params_b > j.memory.trainable_params_b


def test_checkpointing_and_offloading_shrink_activations() -> None:
    full = job(training__gradient_checkpointing=False).memory.activations_gib
    ckpt = job().memory.activations_gib
    off = job(training__activation_offloading=True).memory.activations_gib
    assert full > ckpt > off


def test_derived_values() -> None:
    j = job(resources__gpus_per_node=4, training__global_batch_size=64,
            training__micro_batch_size=4, training__scheduler={"warmup_ratio": 0.1},
            training__epochs=2)
    assert (j.world_size, j.gradient_accumulation_steps) == (4, 4)
    assert j.tokens_per_step == 64 * 2048
    assert j.steps_per_epoch == 52002 // 64 and j.total_steps == 2 * (52002 // 64)
    assert j.warmup_steps == -(-j.total_steps // 10)


def test_fit_table_covers_every_accelerator() -> None:
    j = job(method={"kind": "lora"}, launcher="torchtune")
    table = fit_by_accelerator(j.memory, "bf16")
    assert {f.key for f in table} == set(ACCELERATORS)
    assert all(f.fits == (f.need_gib <= f.capacity_gib) for f in table)
    assert any(not f.bf16 for f in table)  # T4 / V100 cannot run bf16


def test_expert_parallel_splits_the_experts() -> None:
    """Mixtral 8x7B full fine-tuning under DDP on 8 GPUs: EP 8 keeps 1 of 8 experts per
    device, so weights, gradients and optimizer state shrink by the experts' share."""
    from ftspec.compiler.memory import expert_params

    def memory(ep: int) -> Any:
        return make_job(allow_errors=True, model={"family": "mixtral-8x7b", "dtype": "bf16"},
                        method={"kind": "full", "lora": None},
                        resources={"gpus_per_node": 8}, training={"global_batch_size": 8,
                                                                 "micro_batch_size": 1},
                        distributed={"strategy": "ddp", "expert_parallel": ep},
                        launcher="accelerate", deploy={"target": "local"}).memory

    one, eight = memory(1), memory(8)
    job = make_job(allow_errors=True, model={"family": "mixtral-8x7b"},
                   resources={"gpus_per_node": 8}, training={"global_batch_size": 16},
                   launcher="accelerate", deploy={"target": "local"})
    saved = expert_params(job.model) * 7 / 8 * 2 / 2**30  # bf16 weights
    assert one.weights_gib - eight.weights_gib == pytest.approx(saved, rel=0.01)
    assert eight.optimizer_gib < one.optimizer_gib / 3
    assert any("expert parallel" in n for n in eight.notes)
