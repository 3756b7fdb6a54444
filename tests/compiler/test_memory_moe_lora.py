"""The LoRA (and DoRA) trainable-parameter count against PEFT itself.

Tiny random models of every mixture-of-experts architecture in the catalog and of the dense
Granite 4.0 shapes (GraniteMoeHybrid without experts, with and without Mamba-2 layers), built
on the CPU from their transformers config classes; PEFT's ``get_peft_model`` counts the
trainable parameters, ``lora_trainable_params`` must give the same number for the same shapes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from ftspec.compiler.build import _facts_of
from ftspec.compiler.memory_lora import lora_trainable_params
from ftspec.spec.catalog.models import MODEL_FAMILIES
from ftspec.spec.ir import ModelFacts

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

_TINY: dict[str, Any] = {
    "hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128,
}
_ARCH: dict[str, dict[str, Any]] = {
    "qwen3_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                  "decoder_sparse_step": 1, "mlp_only_layers": []},
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "granitemoe": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "granitemoehybrid": {"num_local_experts": 4, "num_experts_per_tok": 2,
                         "shared_intermediate_size": 48, "layer_types": ["mamba", "attention"],
                         "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_d_state": 16,
                         "mamba_n_groups": 1, "mamba_expand": 2},
    "gpt_oss": {"num_local_experts": 4, "num_experts_per_tok": 2,
                "layer_types": ["sliding_attention", "full_attention"]},
    "llama4_text": {"num_local_experts": 4, "num_experts_per_tok": 2,
                    "interleave_moe_layer_step": 1},
}
_DENSE_GRANITE4: dict[str, dict[str, Any]] = {
    "granite-4.0-350m": {"num_local_experts": 0, "shared_intermediate_size": 32,
                         "layer_types": ["attention", "attention"]},
    "granite-4.0-h-1b": {"num_local_experts": 0, "shared_intermediate_size": 32,
                         **{k: v for k, v in _ARCH["granitemoehybrid"].items()
                            if k.startswith(("mamba", "layer"))}},
}
"""Dense Granite 4.0: one family of each shape (attention only; Mamba-2 hybrid)."""
_MOE_ARCHS = sorted({f.arch for f in MODEL_FAMILIES.values() if f.num_experts})
_NAMED = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Every module name a spec's ``target_modules`` can give, and what ``all-linear`` prices."""


def _family_key(arch: str) -> str:
    return next(k for k, f in MODEL_FAMILIES.items() if f.arch == arch and f.num_experts)


def _tiny_facts(arch: str, family: str | None = None) -> ModelFacts:
    """The catalog family's facts at the tiny model's sizes (a shared expert: Granite's
    ``shared_intermediate_size`` 48, or Llama 4's, the experts' size)."""
    facts = _facts_of(MODEL_FAMILIES[family or _family_key(arch)], None)
    mamba = facts.mamba and replace(facts.mamba, attention_layers=(1,), state_size=16,
                                    n_groups=1, num_heads=8, head_dim=16)
    shared = 0 if not facts.shared_intermediate_size else \
        32 if facts.shared_intermediate_size == facts.intermediate_size else 48
    return replace(facts, num_layers=2, hidden_size=64, num_heads=4, num_kv_heads=2,
                   head_dim=16, intermediate_size=32, num_experts=0 if family else 4, mamba=mamba,
                   shared_intermediate_size=shared)


def _peft_trainable(arch: str, targets: str | list[str], dora: bool = False,
                    family: str | None = None) -> int:
    shape = _DENSE_GRANITE4[family] if family else _ARCH.get(arch, {})
    config = transformers.AutoConfig.for_model(arch, **_TINY, **shape)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    lora = peft.get_peft_model(model, peft.LoraConfig(r=8, target_modules=targets,
                                                      use_dora=dora))
    return int(lora.get_nb_trainable_parameters()[0])


def test_every_catalog_moe_architecture_is_covered() -> None:
    assert _MOE_ARCHS == sorted(_ARCH)


@pytest.mark.parametrize("arch", _MOE_ARCHS)
def test_named_targets_match_peft(arch: str) -> None:
    assert lora_trainable_params(_tiny_facts(arch), _NAMED, 8) == _peft_trainable(
        arch, list(_NAMED))


@pytest.mark.parametrize("arch", _MOE_ARCHS)
def test_all_linear_matches_peft(arch: str) -> None:
    """A Granite MoE-hybrid's all-linear also adapts its Mamba-2 and shared-expert projections."""
    assert lora_trainable_params(_tiny_facts(arch), _NAMED, 8, all_linear=True) == (
        _peft_trainable(arch, "all-linear"))


def test_every_dense_granite4_shape_is_covered() -> None:
    dense = [f for f in MODEL_FAMILIES.values()
             if f.arch == "granitemoehybrid" and not f.num_experts]
    assert {f.mamba is None for f in dense} == {True, False}
    assert {MODEL_FAMILIES[k].mamba is None for k in _DENSE_GRANITE4} == {True, False}


@pytest.mark.parametrize("family", sorted(_DENSE_GRANITE4))
@pytest.mark.parametrize("all_linear", [False, True])
def test_dense_granite4_matches_peft(family: str, all_linear: bool) -> None:
    """Its MLP is ``shared_mlp.input_linear`` / ``output_linear``: gate/up/down reach nothing,
    all-linear reaches the fused MLP (and the Mamba-2 projections)."""
    facts = _tiny_facts("granitemoehybrid", family)
    assert lora_trainable_params(facts, _NAMED, 8, all_linear=all_linear) == _peft_trainable(
        "granitemoehybrid", "all-linear" if all_linear else list(_NAMED), family=family)


@pytest.mark.parametrize("arch", ["llama", "qwen3_moe", "granitemoehybrid"])
@pytest.mark.parametrize("all_linear", [False, True])
def test_dora_matches_peft(arch: str, all_linear: bool) -> None:
    """DoRA's magnitude vector: one per output feature of every adapted layer."""
    if arch == "llama":
        facts = replace(_facts_of(MODEL_FAMILIES["llama3_1-8b"], None), num_layers=2,
                        hidden_size=64, num_heads=4, num_kv_heads=2, head_dim=16,
                        intermediate_size=32)
    else:
        facts = _tiny_facts(arch)
    expected = _peft_trainable(arch, "all-linear" if all_linear else list(_NAMED), True)
    assert lora_trainable_params(facts, _NAMED, 8, all_linear=all_linear, dora=True) == expected


def test_a_spec_with_all_linear_prices_the_hybrid_projections() -> None:
    """The spec's ``[all-linear]`` reaches the count (PEFT's, on the accelerate launcher)."""
    from ftspec.compiler.build import build_job
    from ftspec.spec.validate import spec_from_data

    def trainable(targets: list[str]) -> float:
        data: dict[str, Any] = {
            "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "m"},
            "model": {"uri": "hf://ibm-granite/granite-4.0-h-tiny",
                      "family": "granite-4.0-h-tiny"},
            "data": {"train": {"uri": "hf://tatsu-lab/alpaca", "num_examples": 52002},
                     "max_seq_len": 2048},
            "method": {"kind": "lora", "lora": {"rank": 8, "target_modules": targets}},
            "training": {"global_batch_size": 8, "micro_batch_size": 1, "learning_rate": 2e-4},
            "resources": {"gpus_per_node": 1, "accelerator": "nvidia-h100-80gb"},
            "launcher": "accelerate"}
        return build_job(spec_from_data(data)).memory.trainable_params_b

    named = trainable(list(_NAMED))
    facts = _facts_of(MODEL_FAMILIES["granite-4.0-h-tiny"], None)
    assert named == pytest.approx(lora_trainable_params(facts, _NAMED, 8) / 1e9, rel=1e-3)
    assert trainable(["all-linear"]) == pytest.approx(
        lora_trainable_params(facts, _NAMED, 8, all_linear=True) / 1e9, rel=1e-3)
    assert trainable(["all-linear"]) > 2 * named


@pytest.mark.parametrize("all_linear", [False, True])
def test_interleaved_dense_and_moe_layers_match_peft(all_linear: bool) -> None:
    """Llama 4 Maverick's stack: MoE (and a linear router) on every second layer, a dense
    gated MLP (``intermediate_size_mlp``) between, which gate/up/down reach at its own size."""
    config = transformers.AutoConfig.for_model(
        "llama4_text", **_TINY, **{**_ARCH["llama4_text"], "interleave_moe_layer_step": 2,
                                   "intermediate_size_mlp": 48})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    lora = peft.get_peft_model(model, peft.LoraConfig(
        r=8, target_modules="all-linear" if all_linear else list(_NAMED)))
    expected = int(lora.get_nb_trainable_parameters()[0])
    facts = replace(_tiny_facts("llama4_text"), moe_layer_step=2, dense_intermediate_size=48)
    assert lora_trainable_params(facts, _NAMED, 8, all_linear=all_linear) == expected
    assert lora_trainable_params(replace(facts, moe_layer_step=1), _NAMED, 8,
                                 all_linear=all_linear) != expected


def test_maverick_dense_and_moe_layers_save_the_same_mlp_bytes() -> None:
    """One layer figure prices both kinds: a Maverick MoE layer's routed expert (one per
    token) and shared expert save what a dense layer's MLP of their summed width saves; its
    expert parallelism splits the 24 MoE layers' experts only."""
    from ftspec.compiler.memory_placement import expert_params

    f = MODEL_FAMILIES["llama4-maverick-17b-128e"]
    assert f.experts_per_token == 1
    assert f.intermediate_size + f.shared_intermediate_size == f.dense_intermediate_size
    facts = _facts_of(f, None)
    assert expert_params(facts) == 24 * 128 * 3 * 5120 * 8192
