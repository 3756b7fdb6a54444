"""Each term of the memory estimate alone, against figures computed by hand for a small
custom model (2 layers, h=64, 4 heads of 16, 2 KV heads, MLP 128, vocabulary 1000).

The model's parameters (``param_count``): per layer attention 2 x 64 x 64 + 2 x 64 x 32 =
12288 and gated MLP 3 x 64 x 128 = 24576; embeddings and head 2 x 1000 x 64 = 128000 (untied):
2 x 36864 + 128000 = 201728.
"""

from __future__ import annotations

from typing import Any

import pytest
from ftspec.compiler.build import model_facts
from ftspec.compiler.memory import (
    ALLOCATOR_SLACK,
    CONTEXT_GIB,
    GIB,
    NCCL_GIB,
    adapter_weights,
    autocast_copy,
    base_weight_bytes,
    base_weights,
    capacity_gib,
    frozen_casts,
    gradient_bytes,
    gradients_persist,
    load_bytes,
    optimizer_bytes,
    overhead_bytes,
    tied_gradient_bytes,
    trainable_params,
)
from ftspec.compiler.memory_peak import (
    checkpoint_bytes,
    loss_head,
    step_tokens,
    stored_activations,
)
from ftspec.compiler.memory_placement import Placement, placement
from ftspec.spec.ir import ModelFacts
from ftspec.spec.model import FineTuneSpec
from helpers.specdata import with_keys

PARAMS = 201728.0
LAYERS, H, INTER, VOCAB = 2, 64, 128, 1000
LORA_QV = 2 * (8 * (64 + 64) + 8 * (64 + 32))
"""r=8 on q (64 -> 64) and v (64 -> 32), two layers: 3584."""


def spec(**over: Any) -> FineTuneSpec:
    data: dict[str, Any] = {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "t"},
        "model": {"uri": "hf://x/tiny", "architecture": {
            "num_layers": LAYERS, "num_heads": 4, "num_kv_heads": 2, "embed_dim": H,
            "intermediate_dim": INTER, "vocab_size": VOCAB, "max_seq_len": 256}},
        "data": {"train": {"uri": "hf://x/data"}, "max_seq_len": 128},
        "method": {"kind": "full"},
        "training": {"global_batch_size": 8, "learning_rate": 1e-4},
        "resources": {"gpus_per_node": 1},
        "launcher": "accelerate",
    }
    with_keys(data, over)
    return FineTuneSpec.model_validate(data)


def facts(s: FineTuneSpec) -> ModelFacts:
    return model_facts(s)


LORA = {"kind": "lora", "lora": {"rank": 8, "target_modules": ["q_proj", "v_proj"]}}


def test_small_model_parameter_count() -> None:
    assert facts(spec()).params_b * 1e9 == pytest.approx(PARAMS)


@pytest.mark.parametrize(("method", "modules", "expected"), [
    ({"kind": "full"}, (), PARAMS),
    (LORA, ("q_proj", "v_proj"), LORA_QV),
    # + magnitudes: one per output feature, q_proj 64 and v_proj 32 (KV width), 2 layers
    ({**LORA, "kind": "dora"}, ("q_proj", "v_proj"), LORA_QV + 2 * (64 + 32)),
    ({"kind": "prompt_tuning"}, (), 20 * 64),
    ({"kind": "prompt_tuning", "prompt_tuning": {"num_virtual_tokens": 5}}, (), 5 * 64),
    ({"kind": "ia3"}, (), 2 * (2 * 64 + 128)),
])
def test_trainable_params(method: dict[str, Any], modules: tuple[str, ...],
                          expected: float) -> None:
    s = spec(method=method)
    assert trainable_params(s, facts(s), modules) == pytest.approx(expected)


def test_bytes_per_base_parameter() -> None:
    assert load_bytes(spec()) == 2.0
    assert load_bytes(spec(model__precision="mixed")) == 4.0
    assert base_weight_bytes(spec(model__dtype="fp32")) == 4.0
    q4 = spec(method={**LORA, "kind": "qlora"})
    assert base_weight_bytes(q4) == pytest.approx(0.5 + 0.02)  # NF4 + double-quant constants
    q8 = spec(method={**LORA, "kind": "qlora",
                      "quantization": {"bits": 8, "double_quant": False}})
    assert base_weight_bytes(q8) == pytest.approx(1.0 + 0.06)


@pytest.mark.parametrize(("strategy", "distributed", "shards"), [
    ("none", {}, (1, 1, 1)),
    ("ddp", {}, (1, 1, 1)),
    ("fsdp", {}, (8, 8, 8)),
    ("fsdp", {"fsdp": {"sharding": "shard_grad_op"}}, (1, 8, 8)),
    ("fsdp", {"fsdp": {"sharding": "hybrid_shard"}}, (4, 4, 4)),
    ("fsdp", {"fsdp": {"sharding": "hybrid_shard_zero2"}}, (1, 4, 4)),
    ("fsdp", {"fsdp": {"sharding": "no_shard"}}, (1, 1, 1)),
    ("deepspeed", {"deepspeed": {"stage": 0}}, (1, 1, 1)),
    ("deepspeed", {"deepspeed": {"stage": 1}}, (1, 1, 8)),
    ("deepspeed", {}, (1, 8, 8)),  # stage 2 by default
    ("deepspeed", {"deepspeed": {"stage": 3}}, (8, 8, 8)),
])
def test_placement_shards(strategy: str, distributed: dict[str, Any],
                          shards: tuple[int, int, int]) -> None:
    s = spec(distributed=distributed)
    p = placement(s, facts(s), strategy=strategy, world_size=8, procs_per_node=4)
    assert (p.params, p.grads, p.optim) == shards
    assert not p.optim_offloaded and not p.params_offloaded and p.notes == ()


def test_placement_offloads_and_expert_split() -> None:
    s = spec(distributed={"fsdp": {"cpu_offload": True}})
    p = placement(s, facts(s), strategy="fsdp", world_size=2, procs_per_node=2)
    assert p.params_offloaded and p.optim_offloaded
    s = spec(distributed={"deepspeed": {"stage": 3, "offload_optimizer": "cpu",
                                        "offload_params": "nvme"}})
    p = placement(s, facts(s), strategy="deepspeed", world_size=2, procs_per_node=2)
    assert p.notes == ("optimizer state offloaded to cpu", "parameters offloaded to nvme")
    moe = spec(model__architecture__num_experts=8, distributed={"expert_parallel": 4})
    p = placement(moe, facts(moe), strategy="none", world_size=4, procs_per_node=4)
    experts = LAYERS * 8 * 3 * H * INTER  # 393216
    assert p.experts == experts
    # unsharded: the dense part whole, a quarter of the experts
    assert p.per_device(1e6, 1) == pytest.approx(1e6 - experts + experts / 4)
    # sharded over 8: finer than the expert split
    assert p.per_device(1e6, 8) == pytest.approx(1e6 / 8)


def test_base_weights() -> None:
    s = spec()
    m = facts(s)
    assert base_weights(s, m, Placement()) == pytest.approx(PARAMS * 2)
    assert base_weights(s, m, Placement(params=8)) == pytest.approx(PARAMS * 2 / 8)
    offloaded = Placement(params=8, params_offloaded=True)  # two layers' worth gathered
    assert base_weights(s, m, offloaded) == pytest.approx(PARAMS * 2 * 2 / LAYERS)


def test_autocast_copy_only_for_full_mixed() -> None:
    mixed = spec(model__precision="mixed")
    assert autocast_copy(mixed, facts(mixed), Placement()) == pytest.approx(PARAMS * 2)
    assert autocast_copy(mixed, facts(mixed), Placement(params=4)) == pytest.approx(PARAMS / 2)
    pure = spec()
    assert autocast_copy(pure, facts(pure), Placement()) == 0.0
    lora = spec(model__precision="mixed", method=LORA)
    assert autocast_copy(lora, facts(lora), Placement()) == 0.0


def test_autocast_stores_what_pure_stores() -> None:
    """bf16 weights under bf16 autocast: the bytes a parameter loads in, no cast cache of
    trainable weights and no per-call casts of frozen ones (they are already bf16)."""
    full, lora = spec(model__precision="autocast"), spec(model__precision="autocast",
                                                         method=LORA)
    assert load_bytes(full) == load_bytes(spec()) == 2.0
    assert autocast_copy(full, facts(full), Placement()) == 0.0
    assert frozen_casts(lora, facts(lora), Placement()) == 0.0


def test_fp16_autocast_lora_stores_fp16_weights_and_fp32_adapters() -> None:
    """fp16 LoRA under fp16 autocast (TRL ``fp16: true`` over ``dtype: float16``): the base
    loads in fp16 (2 bytes, not mixed's fp32 master copy), PEFT's adapters, their gradients
    and AdamW's two moments in fp32; nothing cast per call or cached (the base is fp16)."""
    from ftspec.compiler.memory import trainable_bytes

    auto = spec(model__dtype="fp16", model__precision="autocast", method=LORA)
    mixed = spec(model__dtype="fp16", method=LORA)
    m, place = facts(auto), Placement()
    assert (load_bytes(auto), load_bytes(mixed)) == (2.0, 4.0)
    assert base_weights(auto, m, place) == pytest.approx(PARAMS * 2)
    train = trainable_bytes(auto, load_bytes(auto), "none")
    assert train == 4.0
    assert adapter_weights(auto, LORA_QV, train, place) == LORA_QV * 4
    assert gradient_bytes(auto, LORA_QV, train, place) == LORA_QV * 4
    assert optimizer_bytes(auto, LORA_QV, train, place) == LORA_QV * 2 * 4
    assert frozen_casts(auto, m, place) == autocast_copy(auto, m, place) == 0.0
    assert frozen_casts(mixed, m, place) > 0.0  # mixed casts the fp32 base at every call


def test_adapter_weights() -> None:
    lora = spec(method=LORA)
    assert adapter_weights(lora, LORA_QV, 4.0, Placement()) == LORA_QV * 4
    assert adapter_weights(spec(), PARAMS, 2.0, Placement()) == 0.0  # full: no adapters
    assert adapter_weights(lora, LORA_QV, 4.0, Placement(params_offloaded=True)) == 0.0


def test_frozen_casts_under_mixed_adapters() -> None:
    per_layer = (PARAMS - 2 * VOCAB * H) / LAYERS  # 36864
    plain = spec(model__precision="mixed", method=LORA)
    assert frozen_casts(plain, facts(plain), Placement()) == pytest.approx(per_layer * LAYERS * 2)
    ckpt = spec(model__precision="mixed", method=LORA, training__gradient_checkpointing=True)
    assert frozen_casts(ckpt, facts(ckpt), Placement(params=2)) == pytest.approx(per_layer)
    pure = spec(method=LORA)
    assert frozen_casts(pure, facts(pure), Placement()) == 0.0
    qlora = spec(model__precision="mixed", method={**LORA, "kind": "qlora"})
    assert frozen_casts(qlora, facts(qlora), Placement()) == 0.0


def test_gradient_bytes() -> None:
    full = spec()
    assert gradient_bytes(full, PARAMS, 2.0, Placement()) == PARAMS * 2
    assert gradient_bytes(full, PARAMS, 2.0, Placement(grads=4)) == PARAMS * 2 / 4
    assert gradient_bytes(full, PARAMS, 2.0, Placement(params_offloaded=True)) == 0.0
    lora = spec(method=LORA)
    assert gradient_bytes(lora, LORA_QV, 4.0, Placement(grads=2)) == LORA_QV * 4 / 2


@pytest.mark.parametrize(("optimizer", "train_bytes", "per_param"), [
    ({"name": "adamw"}, 2.0, 2 * 2.0),  # two moments in the parameter's dtype
    ({"name": "adamw"}, 4.0, 2 * 4.0),
    ({"name": "adamw_8bit"}, 4.0, 2.0),  # two 1-byte moments
    ({"name": "paged_adamw_32bit"}, 2.0, 2 * 4.0),  # fp32 state whatever the parameter
    ({"name": "sgd"}, 2.0, 0.0),
    ({"name": "sgd", "momentum": 0.9}, 2.0, 2.0),
    ({"name": "lion"}, 2.0, 2.0),
    ({"name": "adafactor"}, 2.0, 0.1 * 2.0),
])
def test_optimizer_bytes(optimizer: dict[str, Any], train_bytes: float,
                         per_param: float) -> None:
    s = spec(training__optimizer=optimizer)
    assert optimizer_bytes(s, 1000.0, train_bytes, Placement()) == pytest.approx(
        1000 * per_param)
    assert optimizer_bytes(s, 1000.0, train_bytes, Placement(optim=4)) == pytest.approx(
        1000 * per_param / 4)
    assert optimizer_bytes(s, 1000.0, train_bytes, Placement(optim_offloaded=True)) == 0.0


def test_gradients_persist() -> None:
    assert not gradients_persist("none", 1)
    assert not gradients_persist("fsdp", 1)
    assert gradients_persist("none", 4)
    assert gradients_persist("ddp", 1)
    assert gradients_persist("deepspeed", 1)


def test_tied_gradient_bytes() -> None:
    tied = spec(model__architecture__tied_embeddings=True)
    m = facts(tied)
    assert tied_gradient_bytes(tied, m, 2.0, Placement()) == VOCAB * H * 2
    assert tied_gradient_bytes(tied, m, 2.0, Placement(grads=2)) == 0.0
    assert tied_gradient_bytes(spec(), facts(spec()), 2.0, Placement()) == 0.0  # untied
    lora = spec(model__architecture__tied_embeddings=True, method=LORA)
    assert tied_gradient_bytes(lora, facts(lora), 4.0, Placement()) == 0.0


def test_overhead_and_capacity() -> None:
    assert overhead_bytes(1, 1000.0) == pytest.approx(CONTEXT_GIB * GIB + ALLOCATOR_SLACK * 1000)
    assert overhead_bytes(2, 0.0) == pytest.approx((CONTEXT_GIB + NCCL_GIB) * GIB)
    assert capacity_gib(spec()) is None
    assert capacity_gib(spec(resources={"gpus_per_node": 1,
                                        "accelerator": "nvidia-a100-80gb"})) == 80.0
    assert capacity_gib(spec(resources={"gpus_per_node": 0,
                                        "accelerator": "nvidia-a100-80gb"})) is None


def test_tokens_and_checkpoints() -> None:
    s = spec(training__gradient_checkpointing=True)
    m = facts(s)
    assert step_tokens(s, m, 2) == 256.0  # 2 x 128
    long = spec(data__max_seq_len=None)
    assert step_tokens(long, facts(long), 1) == 256.0  # the model's context
    assert checkpoint_bytes(s, m, 256.0) == 2 * H * 256 * LAYERS
    mixed = spec(model__precision="mixed")
    assert checkpoint_bytes(mixed, facts(mixed), 256.0) == 4 * H * 256 * LAYERS


def test_stored_activations() -> None:
    around = (4 + 2) * H * 256.0  # the final norm's fp32 input and the head's bf16 input
    plain = spec()
    assert stored_activations(plain, facts(plain), 5000.0, 256.0) == 5000 * LAYERS + around
    ckpt = spec(training__gradient_checkpointing=True)
    assert stored_activations(ckpt, facts(ckpt), 5000.0, 256.0) == \
        2 * H * 256 * LAYERS + around
    off = spec(training__gradient_checkpointing=True, training__activation_offloading=True)
    assert stored_activations(off, facts(off), 5000.0, 256.0) == around


def test_loss_head_torchtune() -> None:
    tune = spec(launcher="torchtune")
    logits, largest = loss_head(tune, facts(tune), 256.0)
    assert logits == 256 * VOCAB * 12  # log-softmax backward: 4 + 4 + 4 bytes per logit
    assert largest == 256 * VOCAB * 4
    chunked = spec(launcher="torchtune", training__loss="chunked_cross_entropy")
    logits, largest = loss_head(chunked, facts(chunked), 256.0)
    assert logits == pytest.approx(256 * VOCAB * (2 + 4 + 4 / 8))
    assert largest == 256 * VOCAB * 4 / 8


def test_loss_head_fused_on_trl() -> None:
    # GPU: one tile (256 tokens x 1000 entries in bf16), the hidden states' fp32 gradient and
    # saved bf16 input; the trained head's fp32 gradient, then its bf16 cast
    s = spec(resources={"gpus_per_node": 1})
    held, largest = loss_head(s, facts(s), 256.0)
    tile = 256 * VOCAB * 2
    grad = VOCAB * H * 4
    assert held == tile + 256 * H * (4 + 2) + grad + VOCAB * H * 2
    assert largest == tile  # the tile (512000 bytes) outweighs the head's gradient (256000)
