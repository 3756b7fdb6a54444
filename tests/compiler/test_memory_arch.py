"""Mamba-2 and vision-tower terms alone, against figures computed by hand for small shapes.

Mamba: h=64, 4 SSM heads of 32 (inner 128), state 16, one group, kernel 4, chunks of 64:
conv_dim = 128 + 2 x 16 = 160, in_proj width 2 x 128 + 2 x 16 + 4 = 292.
Vision: d=32, 2 layers, MLP 64, 4 heads, 4-pixel patches on 16-pixel tiles (16 patches a
tile), two feature layers, LLaVA-NeXT tiling.
"""

from __future__ import annotations

from typing import Any

import pytest
from ftspec.compiler.build import model_facts
from ftspec.compiler.memory_arch import (
    image_tiles,
    image_tokens,
    mamba_layer_saved_bytes,
    mamba_mixer_saved_bytes,
    mamba_scan_buffer_bytes,
    vision_activation_bytes,
    vision_layer_saved_bytes,
)
from ftspec.compiler.memory_peak import step_tokens, stored_activations
from ftspec.spec.catalog.blocks import (
    MambaFacts,
    VisionFacts,
    mamba_layer_params,
    vision_tower_params,
)
from ftspec.spec.catalog.family import ModelFamily, param_count
from ftspec.spec.model import FineTuneSpec

MAMBA = MambaFacts((1,), 16, 4, 1, 4, 32, 64)
VISION = VisionFacts(32, 2, 64, 4, 4, 16, feature_layers=2, anyres=True)


def spec(method: str = "lora", **arch: Any) -> FineTuneSpec:
    return FineTuneSpec.model_validate({
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "t"},
        "model": {"uri": "hf://x/hybrid", "architecture": {
            "num_layers": 3, "num_heads": 4, "num_kv_heads": 2, "embed_dim": 64,
            "intermediate_dim": 128, "vocab_size": 1000, "max_seq_len": 256, **arch}},
        "data": {"train": {"uri": "hf://x/data"}, "max_seq_len": 100},
        "method": {"kind": method} if method != "lora" else
        {"kind": "lora", "lora": {"rank": 8, "target_modules": ["q_proj", "v_proj"]}},
        "training": {"global_batch_size": 8, "learning_rate": 1e-4},
        "resources": {"gpus_per_node": 1},
        "launcher": "accelerate",
    })


HYBRID = {"mamba": {"attention_layers": [1], "state_size": 16, "num_heads": 4, "head_dim": 32,
                    "chunk_size": 64}}


def test_mamba_shape() -> None:
    assert MAMBA.inner == 128
    assert MAMBA.conv_dim == 160


def test_mamba_layer_params() -> None:
    # in_proj 64 x 292, conv 160 x 4, dt_bias / A_log / D 3 x 4, norm 128, out_proj 128 x 64
    assert mamba_layer_params(64, MAMBA) == 64 * 292 + 640 + 12 + 128 + 8192  # 27660


def test_hybrid_param_count() -> None:
    f = ModelFamily("h", "h", 0.0, 3, 64, 4, 2, 128, 1000, 256, "X", mamba=MAMBA)
    attention = 2 * 64 * 64 + 2 * 64 * 32  # one attention layer
    mlp = 3 * 64 * 128  # every layer's gated MLP
    assert param_count(f) == attention + 2 * 27660 + 3 * mlp + 2 * 1000 * 64
    shared = ModelFamily("s", "s", 0.0, 3, 64, 4, 2, 128, 1000, 256, "X", mamba=MAMBA,
                         num_experts=4, shared_intermediate_size=32)
    moe = 4 * mlp + 64 * 4 + 3 * 64 * 32  # routed experts, router, shared expert
    assert param_count(shared) == attention + 2 * 27660 + 3 * moe + 2 * 1000 * 64


def test_mamba_mixer_saved_bytes() -> None:
    # bf16: in_proj output 292 + the scan's output 128, x 2 bytes, + one fp32 rstd
    assert mamba_mixer_saved_bytes(spec(), MAMBA, 64) == 2 * (292 + 128) + 4
    # a trained in_proj keeps its input too
    assert mamba_mixer_saved_bytes(spec("full"), MAMBA, 64) == 2 * (292 + 128) + 4 + 2 * 64


def test_mamba_layer_saved_bytes() -> None:
    lora = spec(**HYBRID)
    # two fp32 norm inputs 2 x 4 x 64, the mixer 844, the gated MLP 3 x 2 x 128
    assert mamba_layer_saved_bytes(lora, model_facts(lora)) == 512 + 844 + 768
    full = spec("full", **HYBRID)
    # + the mixer's in_proj input 128, the norms' bf16 outputs 2 x 2 x 64, the MLP's inputs
    # 2 x (64 + 128)
    assert mamba_layer_saved_bytes(full, model_facts(full)) == 512 + 972 + 768 + 256 + 384


def test_mamba_scan_buffers() -> None:
    # 2 sequences of 100 tokens: 2 chunks of 64; states 2 x 2 x 4 x 32 x 16 fp32; the
    # convolution's padded input 2 x 160 x (100 + 3) in bf16
    assert mamba_scan_buffer_bytes(spec(), MAMBA, 2, 100) == 2 * 2 * 4 * 32 * 16 * 4 \
        + 2 * 160 * 103 * 2


def test_hybrid_stored_activations() -> None:
    s = spec(**HYBRID)
    m = model_facts(s)
    around = (4 + 2) * 64 * 100.0
    attention_layer = 5000.0
    assert stored_activations(s, m, attention_layer, 100.0) == \
        attention_layer * 1 + (512 + 844 + 768) * 100 * 2 + around


def test_image_tokens() -> None:
    assert image_tiles(VISION, 16, 32) == (1, 2)
    # base tile 4 x 4 patches; grid 4 x 4 plus a newline per row of 4
    assert image_tokens(VISION, 16, 16) == 16 + 16 + 4
    # 16 x 32: a 1 x 2 grid, 4 x 8 patches and 4 newlines
    assert image_tokens(VISION, 16, 32) == 16 + 32 + 4
    single = VisionFacts(32, 2, 64, 4, 4, 16)
    assert image_tokens(single, 16, 32) == 16  # LLaVA 1.5: one resized tile


def test_vision_tower_params() -> None:
    # patch embedding 3 x 4 x 4 x 32, 16 positions x 32, two layers (4 x 32^2 + 2 x 32 x 64),
    # the projector from 2 x 32 to 64 and 64 -> 64
    assert vision_tower_params(VISION, 64) == 1536 + 512 + 2 * (4096 + 4096) + 4096 + 4096


def test_vision_activations() -> None:
    assert vision_layer_saved_bytes(spec("full"), VISION) == 2 * (8 * 32 + 2 * 64) + 4 * 4
    # one 16 x 16 image: base tile + a 1 x 1 grid = 32 patches, 2 layers, 784 bytes each
    assert vision_activation_bytes(spec("full"), VISION, 1, 16, 16) == 32 * 2 * 784
    ckpt = FineTuneSpec.model_validate({
        **spec("full").model_dump(mode="json", exclude_unset=True),
        "training": {"global_batch_size": 8, "learning_rate": 1e-4,
                     "gradient_checkpointing": True}})
    assert vision_activation_bytes(ckpt, VISION, 1, 16, 16) == 32 * 2 * 2 * 32
    assert vision_activation_bytes(spec(), VISION, 1, 16, 16) == 0.0  # frozen tower


def test_image_tokens_count_into_the_sequence() -> None:
    vision = {"vision": {"hidden_size": 32, "num_layers": 2, "intermediate_size": 64,
                         "num_heads": 4, "patch_size": 2, "image_size": 32, "anyres": True}}
    s = spec(**vision)
    m = model_facts(s)
    # 16 x 16 patches a tile: 256 + 256 + 16 newlines = 528 tokens > max_seq_len 100
    assert step_tokens(s, m, 2) == 2 * 528.0
    assert step_tokens(spec(), model_facts(spec()), 2) == 200.0


@pytest.mark.parametrize("family", ["granite-4.0-h-tiny", "granite-vision-3.2-2b"])
def test_catalog_shapes_reach_the_facts(family: str) -> None:
    s = FineTuneSpec.model_validate({
        **spec().model_dump(mode="json", exclude_unset=True),
        "model": {"uri": "hf://x/y", "family": family}})
    m = model_facts(s)
    assert (m.mamba is not None) == ("-h-" in family)
    assert (m.vision is not None) == ("vision" in family)


def test_lora_on_a_hybrid_stack_adapts_the_attention_layers_only() -> None:
    from ftspec.compiler.memory import trainable_params

    s = spec(**HYBRID)
    # r=8 on q (64 -> 64) and v (64 -> 32) in the one attention layer of three
    assert trainable_params(s, model_facts(s), ("q_proj", "v_proj")) == 8 * (128 + 96)
    # MLP projections are in every layer: down_proj 128 -> 64, three layers
    assert trainable_params(s, model_facts(s), ("down_proj",)) == 3 * 8 * (128 + 64)
