"""Gated linear-attention (Gated DeltaNet) hybrids and attention output gates (Qwen3.5): the
parameter count, LoRA's adapters and the memory terms.

Counts are compared with what transformers and PEFT build for a tiny ``qwen3_5_text`` model;
the memory terms against figures computed by hand for small shapes. Linear layers: h=64,
key heads 2 x 16 (key width 32), value heads 4 x 16 (value width 64), kernel 4: conv_dim =
2 x 32 + 64 = 128. Attention: 4 heads of 16 (query width 64), 2 KV heads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from ftspec.compiler.build import _facts_of
from ftspec.compiler.memory_arch import (
    hybrid_attention_layers,
    linear_layer_saved_bytes,
    linear_mixer_saved_bytes,
    linear_state_buffer_bytes,
    output_gate_saved_bytes,
)
from ftspec.compiler.memory_lora import attention_layers, lora_trainable_params
from ftspec.compiler.memory_peak import layer_saved_bytes, stored_activations
from ftspec.spec.catalog.blocks import LinearAttentionFacts, linear_attention_params
from ftspec.spec.catalog.family import param_count
from ftspec.spec.catalog.models import MODEL_FAMILIES
from ftspec.spec.ir import ModelFacts
from ftspec.spec.model import FineTuneSpec

LINEAR = LinearAttentionFacts((3,), 2, 4, 16, 16, 4)
_TINY: dict[str, Any] = {
    "hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
    "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4, "attn_output_gate": True,
    "layer_types": ["linear_attention"] * 3 + ["full_attention"],
}
_NAMED = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _tiny_facts() -> ModelFacts:
    """Qwen3.5 9B's facts at the tiny model's sizes."""
    return replace(_facts_of(MODEL_FAMILIES["qwen3_5-9b"], None), num_layers=4, hidden_size=64,
                   num_heads=4, num_kv_heads=2, head_dim=16, intermediate_size=32,
                   vocab_size=128, linear_attention=LINEAR)


def _spec(method: str = "lora", modules: tuple[str, ...] = ("q_proj", "v_proj")) -> FineTuneSpec:
    return FineTuneSpec.model_validate({
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "t"},
        "model": {"uri": "hf://Qwen/Qwen3.5-9B", "family": "qwen3_5-9b"},
        "data": {"train": {"uri": "hf://x/data"}, "max_seq_len": 100},
        "method": {"kind": method} if method != "lora" else
        {"kind": "lora", "lora": {"rank": 8, "target_modules": list(modules)}},
        "training": {"global_batch_size": 8, "learning_rate": 1e-4},
        "resources": {"gpus_per_node": 1},
        "launcher": "accelerate",
    })


def test_linear_shape_and_params_by_hand() -> None:
    assert (LINEAR.key_dim, LINEAR.value_dim, LINEAR.conv_dim) == (32, 64, 128)
    # in_proj_qkv 64 x 128, in_proj_z 64 x 64, in_proj_b/a 64 x 4 each, conv 128 x 4,
    # out_proj 64 x 64
    assert linear_attention_params(64, LINEAR) == 8192 + 4096 + 512 + 512 + 4096


def test_catalog_qwen3_5_layers() -> None:
    """Three linear layers in four, full attention on every fourth (layer_types), gated."""
    for key, layers in (("qwen3_5-9b", 32), ("qwen3_5-27b", 64)):
        f = MODEL_FAMILIES[key]
        assert f.linear_attention is not None and f.attn_output_gate
        assert f.linear_attention.attention_layers == tuple(range(3, layers, 4))


torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")


def _tiny_model() -> Any:
    config = transformers.AutoConfig.for_model("qwen3_5_text", **_TINY)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config)


def test_param_count_matches_transformers_tiny_model() -> None:
    """Weight matrices (norms, dt_bias and A_log left out) of transformers' own model; without
    the output gate or with every layer full attention the count differs."""
    model = _tiny_model()
    built = sum(p.numel() for n, p in model.named_parameters()
                if p.dim() >= 2 and not n.endswith("bias"))
    family = replace(MODEL_FAMILIES["qwen3_5-9b"], num_layers=4, hidden_size=64, num_heads=4,
                     num_kv_heads=2, head_dim=16, intermediate_size=32, vocab_size=128,
                     linear_attention=LINEAR)
    assert param_count(family) == built
    assert param_count(replace(family, attn_output_gate=False)) != built
    assert param_count(replace(family, linear_attention=None)) != built


@pytest.mark.parametrize("all_linear", [False, True])
@pytest.mark.parametrize("dora", [False, True])
def test_lora_count_matches_peft(all_linear: bool, dora: bool) -> None:
    """q/k/v/o reach the full-attention layers only (q_proj twice the query width: the gate);
    all-linear also reaches each linear layer's in_proj_qkv / z / b / a and out_proj."""
    lora = peft.get_peft_model(_tiny_model(), peft.LoraConfig(
        r=8, target_modules="all-linear" if all_linear else list(_NAMED), use_dora=dora))
    expected = int(lora.get_nb_trainable_parameters()[0])
    facts = _tiny_facts()
    assert attention_layers(facts) == 1
    assert lora_trainable_params(facts, _NAMED, 8, all_linear=all_linear, dora=dora) == expected
    assert lora_trainable_params(replace(facts, attn_output_gate=False), _NAMED, 8,
                                 all_linear=all_linear, dora=dora) != expected


def test_linear_mixer_terms_by_hand() -> None:
    """bf16 LoRA: conv input and q/k/v (2 x 2 x 128), the key norms' fp32 reciprocals (2 x 4
    x 2), per value head g, beta, A and softplus's input (4 x (4 + 2 + 2 x 64 + 4)), the gated
    norm's fp32 input and gate (2 x 4 x 64); full adds in_proj's input and out_proj's (2 x
    (64 + 64))."""
    lora = _spec()
    assert linear_mixer_saved_bytes(lora, LINEAR, 64) == 512 + 16 + 552 + 512
    assert linear_mixer_saved_bytes(_spec("full"), LINEAR, 64) == 512 + 16 + 552 + 512 + 256


def test_linear_state_buffers_by_hand() -> None:
    """Two sequences of 100 tokens: two chunks of 64; states and their gradients 2 x 2 x 2 x 4
    x 16 x 16 x 2 bytes, the padded convolution input 2 x 128 x 103 x 2."""
    assert linear_state_buffer_bytes(_spec(), LINEAR, 2, 100) == 2 * (2 * 2 * 4 * 256 * 2) \
        + 2 * 128 * 103 * 2


def test_output_gate_terms() -> None:
    """The sigmoid's output and the product's copy of attention's output (2 x 2 x 64), and
    o_proj's input when it trains; nothing without a gate."""
    facts = _tiny_facts()
    assert output_gate_saved_bytes(_spec(), facts, o_proj_trained=False) == 256
    assert output_gate_saved_bytes(_spec(), facts, o_proj_trained=True) == 384
    assert output_gate_saved_bytes(_spec(), replace(facts, attn_output_gate=False), True) == 0
    plain = layer_saved_bytes(_spec(), replace(facts, attn_output_gate=False), ("q_proj",), 2)
    assert layer_saved_bytes(_spec(), facts, ("q_proj",), 2) == plain + 256
    with_o = layer_saved_bytes(_spec(modules=("o_proj",)), facts, ("o_proj",), 2)
    assert with_o - layer_saved_bytes(_spec(modules=("o_proj",)),
                                      replace(facts, attn_output_gate=False), ("o_proj",), 2) \
        == 384


def test_hybrid_stack_stores_linear_layers_as_linear() -> None:
    """Three linear layers' bytes beside one attention layer's (not four attention layers)."""
    spec, facts = _spec(), _tiny_facts()
    assert hybrid_attention_layers(facts) == (3,)
    layer = 1000.0
    tokens = 100.0
    head = (4.0 + 2) * 64 * tokens
    expected = layer + 3 * linear_layer_saved_bytes(spec, facts) * tokens + head
    assert stored_activations(spec, facts, layer, tokens) == expected
    dense = replace(facts, linear_attention=None)
    assert stored_activations(spec, dense, layer, tokens) == 4 * layer + head
