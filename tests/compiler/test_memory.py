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
from helpers.specdata import with_keys

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
    with_keys(data, over)
    return build_job(spec_from_data(data))


P8B = 8.03e9
"""Llama-3.1-8B's parameters (the catalog's figure)."""
H, LAYERS, VOCAB, SEQ = 4096, 32, 128256, 2048


def states_bytes(m: Any) -> float:
    return (m.weights_gib + m.gradients_gib + m.optimizer_gib) * GIB


def test_full_8b_mixed_precision_needs_18_bytes_per_param() -> None:
    # TRL mixed: fp32 weights 4 + autocast's bf16 copy 2 + fp32 gradients 4 + AdamW's two
    # fp32 moments 8 = 18 bytes per parameter
    m = job(model__precision="mixed").memory
    assert states_bytes(m) == pytest.approx(P8B * (4 + 2 + 4 + 8), abs=0.03 * GIB)
    assert m.fits is False


def test_full_8b_pure_bf16_needs_8_bytes_per_param() -> None:
    # pure bf16 (the default for bf16): weights 2 + gradients 2 + AdamW moments 2 x 2 = 8,
    # on both launchers: torch's AdamW keeps its state in the parameter's dtype
    for launcher in ("accelerate", "torchtune"):
        m = job(launcher=launcher).memory
        assert m.weights_gib * GIB == pytest.approx(P8B * 2, abs=0.01 * GIB)
        assert m.gradients_gib * GIB == pytest.approx(P8B * 2, abs=0.01 * GIB)
        assert m.optimizer_gib * GIB == pytest.approx(P8B * 4, abs=0.01 * GIB)
    fp32 = job(model__dtype="fp32").memory  # pure fp32: 4 + 4 + 8 = 16
    assert states_bytes(fp32) == pytest.approx(P8B * 16, abs=0.03 * GIB)


def test_lora_prices_the_load_dtype_and_the_adapter_dtype() -> None:
    # r=8 on q and v: 32 x 8 x ((4096+4096) + (4096+1024)) adapter parameters
    lora = {"kind": "lora", "lora": {"rank": 8, "target_modules": ["q_proj", "v_proj"]}}
    n = 32 * 8 * (8192 + 5120)
    # TRL mixed: frozen base in fp32 (4), adapters, gradients fp32 (4 + 4), AdamW 8; autocast
    # casts the frozen projections at every call and saves the bf16 copies: one layer's
    # (checkpointed), 2 bytes x (params less the untied embedding and head) / 32 layers
    mixed = job(method=lora, model__precision="mixed").memory
    layer = (P8B - 2 * VOCAB * H) / LAYERS
    assert mixed.weights_gib * GIB == pytest.approx(P8B * 4 + n * 4 + layer * 2,
                                                    abs=0.01 * GIB)
    assert mixed.optimizer_gib * GIB == pytest.approx(n * 8, abs=0.01 * GIB)
    every = job(method=lora, model__precision="mixed",
                training__gradient_checkpointing=False).memory
    assert every.weights_gib * GIB == pytest.approx(P8B * 4 + n * 4 + layer * 2 * LAYERS,
                                                    abs=0.01 * GIB)
    # TRL pure bf16: base 2; PEFT upcasts the adapters to fp32 (autocast_adapter_dtype)
    pure = job(method=lora).memory
    assert pure.weights_gib * GIB == pytest.approx(P8B * 2 + n * 4, abs=0.01 * GIB)
    assert pure.gradients_gib * GIB == pytest.approx(n * 4, abs=0.01 * GIB)
    # torchtune pure bf16: adapters built in bf16 too: base 2, adapters 2, AdamW 2 x 2
    tune = job(method=lora, launcher="torchtune").memory
    assert tune.weights_gib * GIB == pytest.approx(P8B * 2 + n * 2, abs=0.01 * GIB)
    assert tune.optimizer_gib * GIB == pytest.approx(n * 4, abs=0.01 * GIB)


def test_torchtune_logits_are_priced_as_each_loss_computes_them() -> None:
    lora = {"kind": "lora", "lora": {"rank": 8, "target_modules": ["q_proj", "v_proj"]}}
    cases = {
        # log-softmax backward: saved fp32 log-softmax 4 + nll's gradient 4 + its own 4
        ("cross_entropy", "bf16"): 12,
        ("cross_entropy", "fp32"): 12,
        # CEWithChunkedOutputLoss' forward: bf16 chunks 2 + every fp32 log-softmax 4 + one
        # chunk's upcast 4 / 8; in fp32 the chunk is its own upcast
        ("chunked_cross_entropy", "bf16"): 2 + 4 + 4 / 8,
        ("chunked_cross_entropy", "fp32"): 4 + 4,
    }
    for (loss, dtype), per_logit in cases.items():
        m = job(launcher="torchtune", method=lora, training__loss=loss,
                model__dtype=dtype).memory
        assert m.logits_gib * GIB == pytest.approx(SEQ * VOCAB * per_logit, abs=0.01 * GIB), (
            loss, dtype)
        # checkpointed: the layers keep their inputs (2 or 4 bytes x h) until the loss
        per_token = 2 if dtype == "bf16" else 4
        assert m.activations_gib * GIB >= SEQ * H * LAYERS * per_token


def test_trl_fused_head_never_builds_the_logits() -> None:
    # TRL's fused LM head: one 4096-token x 32768-entry bf16 tile, the fp32 hidden-state
    # gradient and the gathered hidden states (2 x 2048 tokens x 4096 x (4 + 2)), and for a
    # full fine-tune the head weight's gradient in fp32 and its bf16 cast (128256 x 4096 x
    # 6); a plain backward so that the loss is the step's peak; no accumulation, so that the
    # step's gradients do not exist yet there
    m = job(training__gradient_checkpointing=False, training__global_batch_size=2,
            training__micro_batch_size=2).memory
    tile = 4096 * 32768 * 2
    expected = tile + 2 * SEQ * H * 6 + VOCAB * H * 6
    assert m.logits_gib * GIB == pytest.approx(expected, abs=0.01 * GIB)
    assert m.gradients_gib == 0
    # accumulating over 8 micro batches: the gradients of the earlier ones are alive
    accumulating = job(training__gradient_checkpointing=False).memory
    assert accumulating.gradients_gib * GIB == pytest.approx(P8B * 2, abs=0.01 * GIB)
    # 32k tokens: the bf16 logits alone would be 32768 x 128256 x 2 bytes = 7.8 GiB; the
    # head holds a tile, per-token vectors and the head's gradient (0.25 + 0.75 + 2.9 GiB)
    long = job(data__max_seq_len=32768, training__gradient_checkpointing=False).memory
    assert long.logits_gib * GIB == pytest.approx(
        tile + 32768 * H * 6 + VOCAB * H * 6, abs=0.01 * GIB)
    assert long.logits_gib < 32768 * VOCAB * 2 / GIB


def test_layer_saved_bytes_hand_computed() -> None:
    # Llama 3.2 1B (h 2048, q 2048, kv 512, MLP 8192), bf16, bytes per token per layer over h
    from ftspec.compiler.memory_peak import layer_saved_bytes

    every = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    lora = {"kind": "lora", "lora": {"rank": 8, "target_modules": list(every)}}
    h, heads = 2048, 32
    lse = 4 * heads / h
    cases = {
        # norms 2 x 4 + their bf16 outputs 2 x 2 + projection inputs 2 x 2 + down 2 x 4
        # + SDPA q, k, v, out 2 x (1 + 1 + 0.25 + 0.25) + MLP 3 x 2 x 4
        ("accelerate", "full"): 8 + 4 + 4 + 8 + 5 + 24,
        # norms 8 + SDPA 5 + MLP 24 + fp32 inputs of q, k, v, o, gate, up (4 x 6) and down
        # (4 x 4), plus each rank-8 middle in fp32
        ("accelerate", "lora"): 8 + 5 + 24 + 24 + 16 + 7 * 8 * 4 / h,
        # norms 2 x (4 + 4) + projection inputs 4 + down 8 + SDPA 4 x 2 (k, v expanded)
        # + MLP 24
        ("torchtune", "full"): 16 + 4 + 8 + 8 + 24,
        # norms 8 + adapters' inputs: two norm outputs 4, down's 8 + SDPA 8 + MLP 24,
        # plus the bf16 rank-8 middles
        ("torchtune", "lora"): 8 + 4 + 8 + 8 + 24 + 7 * 8 * 2 / h,
    }
    for (launcher, method), per_h in cases.items():
        j = make_job(allow_errors=True, model={"family": "llama3_2-1b", "dtype": "bf16"},
                     method=lora if method == "lora" else {"kind": "full", "lora": None},
                     launcher=launcher, deploy={"target": "local"})
        adapter = 4.0 if (launcher, method) == ("accelerate", "lora") else 2.0
        got = layer_saved_bytes(j.spec, j.model, j.lora_modules, adapter)
        assert got == pytest.approx((per_h + lse) * h), (launcher, method)


def test_full_8b_fsdp_over_8_gpus_fits_80gb() -> None:
    m = job(resources__gpus_per_node=8, distributed__strategy="fsdp",
            model__precision="mixed").memory
    assert states_bytes(m) == pytest.approx(P8B * 18 / 8, abs=0.03 * GIB)
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
    assert m.weights_gib < 5.0  # ~0.52 bytes per parameter + bf16 adapters
    assert m.fits is True


def test_gptq_adapters_stay_fp32_where_bitsandbytes_ones_go_bf16() -> None:
    # TRL's SFTTrainer casts adapters to bf16 only over a bitsandbytes-quantized base
    # (is_loaded_in_4bit / 8bit); over GPTQ they stay as PEFT made them: fp32
    lora = {"rank": 256, "target_modules": ["q_proj", "v_proj"]}  # large: GiB round to 0.01
    qlora = job(method={"kind": "qlora", "lora": lora, "quantization": {"bits": 4}}).memory
    gptq = job(method={"kind": "gptq_lora", "lora": lora,
                       "quantization": {"bits": 4, "quant_type": "gptq"}}).memory
    adapters = 32 * 256 * (8192 + 5120)
    assert qlora.trainable_params_b == gptq.trainable_params_b == pytest.approx(adapters / 1e9, rel=1e-3)
    assert qlora.gradients_gib * GIB == pytest.approx(adapters * 2, abs=0.005 * GIB)
    assert gptq.gradients_gib * GIB == pytest.approx(adapters * 4, abs=0.005 * GIB)
    assert gptq.optimizer_gib * GIB == pytest.approx(adapters * 2 * 4, abs=0.005 * GIB)


def test_lora_trainable_params_hand_computed() -> None:
    # Llama-3.1-8B, r=8 on q and v: per layer 8*(4096+4096) + 8*(4096+1024), 32 layers
    j = job(method={"kind": "lora", "lora": {"rank": 8, "target_modules": ["q_proj", "v_proj"]}})
    assert abs(j.memory.trainable_params_b * 1e9 - 32 * 8 * (8192 + 5120)) < 1e3
    dora = job(method={"kind": "dora", "lora": {"rank": 8,
                                                "target_modules": ["q_proj", "v_proj"]}})
    assert dora.memory.trainable_params_b > j.memory.trainable_params_b


def test_checkpointing_and_offloading_shrink_activations() -> None:
    full = job(training__gradient_checkpointing=False).memory
    ckpt = job().memory
    off = job(training__activation_offloading=True, launcher="torchtune").memory
    assert full.activations_gib > ckpt.activations_gib > off.activations_gib
    # checkpointed full fine-tune of 8B without accumulation: the peak is the end of
    # backward, with every gradient made (16 GB) and one layer recomputed
    end = job(training__global_batch_size=1).memory
    assert end.gradients_gib * GIB == pytest.approx(P8B * 2, abs=0.01 * GIB)
    assert end.logits_gib == 0


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
    from ftspec.compiler.memory_placement import expert_params

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
