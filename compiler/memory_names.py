"""A model's parameters as transformers names them (``named_parameters()``), from the
architecture numbers, for the estimate of what ``method.unfrozen_parameters`` trains.

Written for the decoders whose layers transformers 5 names as Llama's (``LLAMA_NAMED``):
``model.embed_tokens``, ``model.layers.{i}.self_attn.{q,k,v,o}_proj``,
``mlp.{gate,up,down}_proj``, the two layer norms, ``model.norm`` and ``lm_head`` unless
tied (a tied head is the embedding's tensor, listed once as ``named_parameters`` does),
plus each family's additions: Qwen2's q/k/v biases, Qwen3's and Gemma 3's q/k norms,
Gemma 2's and 3's feed-forward norms. Other architectures (fused or renamed projections,
mixtures of experts, Mamba-2 stacks, vision towers) return ``None``.
tests/compiler/test_memory_frozen.py compares names and sizes with tiny transformers models
and the totals with the catalog's ``param_count`` and ``memory_lora``'s adapters.
"""

from __future__ import annotations

from dataclasses import dataclass

from ftspec.spec.ir import ModelFacts
from ftspec.spec.module_names import (
    ATTENTION_MODULES,
    LINEAR_MODULES,  # noqa: F401 (tests read it here)
    MLP_MODULES,
)

LLAMA_NAMED = frozenset({
    "", "LlamaDecoderLayer", "MistralDecoderLayer", "Qwen2DecoderLayer", "Qwen3DecoderLayer",
    "GraniteDecoderLayer", "SmolLM3DecoderLayer", "GemmaDecoderLayer", "Gemma2DecoderLayer",
    "Gemma3DecoderLayer",
})
"""Decoder layers named as Llama's (``""``: a custom architecture without ``layer_cls``,
built by transformers' Llama classes)."""
_QKV_BIAS = frozenset({"Qwen2DecoderLayer"})
_QK_NORM = frozenset({"Qwen3DecoderLayer", "Gemma3DecoderLayer"})
_FFN_NORMS = frozenset({"Gemma2DecoderLayer", "Gemma3DecoderLayer"})


@dataclass(frozen=True)
class Param:
    """One parameter tensor: its name, element count, and the linear layer it is the
    weight of (``q_proj``, …; empty for embeddings, norms and biases)."""

    name: str
    numel: int
    linear: str = ""


def hf_parameters(model: ModelFacts) -> tuple[Param, ...] | None:
    """Every parameter of the model in ``named_parameters()`` order, or ``None`` for an
    architecture named otherwise."""
    if (model.hf_layer_cls not in LLAMA_NAMED or model.num_experts or model.mamba
            or model.vision or not model.gated_mlp):
        return None
    h, v = model.hidden_size, model.vocab_size
    out = [Param("model.embed_tokens.weight", v * h)]
    for i in range(model.num_layers):
        out += _layer(model, f"model.layers.{i}.")
    out.append(Param("model.norm.weight", h))
    if not model.tied_embeddings:
        out.append(Param("lm_head.weight", v * h))
    return tuple(out)


def linear_shapes(model: ModelFacts) -> dict[str, tuple[int, int]]:
    """(in, out) features of each linear layer of a decoder layer."""
    h, inter = model.hidden_size, model.intermediate_size
    q = model.num_heads * model.attn_head_dim
    kv = model.num_kv_heads * model.attn_head_dim
    return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
            "gate_proj": (h, inter), "up_proj": (h, inter), "down_proj": (inter, h)}


def _layer(model: ModelFacts, at: str) -> list[Param]:
    """One decoder layer's parameters, prefixed ``at``."""
    cls, h, hd = model.hf_layer_cls, model.hidden_size, model.attn_head_dim
    shapes = linear_shapes(model)
    out: list[Param] = []
    for name in ATTENTION_MODULES:
        fan_in, fan_out = shapes[name]
        out.append(Param(f"{at}self_attn.{name}.weight", fan_in * fan_out, name))
        if cls in _QKV_BIAS and name != "o_proj":
            out.append(Param(f"{at}self_attn.{name}.bias", fan_out))
    if cls in _QK_NORM:
        out += [Param(f"{at}self_attn.{n}.weight", hd) for n in ("q_norm", "k_norm")]
    for name in MLP_MODULES:
        fan_in, fan_out = shapes[name]
        out.append(Param(f"{at}mlp.{name}.weight", fan_in * fan_out, name))
    norms = ["input_layernorm", "post_attention_layernorm"]
    if cls in _FFN_NORMS:
        norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
    return out + [Param(f"{at}{n}.weight", h) for n in norms]


def peft_parameters(model: ModelFacts, modules: tuple[str, ...], rank: int,
                    dora: bool = False) -> tuple[Param, ...] | None:
    """The parameters of the model PEFT's LoRA wraps, as its ``named_parameters()`` names
    them: every name under ``base_model.model.``; an adapted linear layer's weight becomes
    ``….base_layer.weight``, followed by ``lora_A.default.weight`` (r x in),
    ``lora_B.default.weight`` (out x r) and, with DoRA,
    ``lora_magnitude_vector.default.weight`` (out). The adapters' ``Param.linear`` is
    ``"lora"``; ``modules``: the layers LoRA reaches."""
    base = hf_parameters(model)
    if base is None:
        return None
    shapes = linear_shapes(model)
    out: list[Param] = []
    for p in base:
        name = "base_model.model." + p.name
        if p.linear not in modules:
            out.append(Param(name, p.numel, p.linear))
            continue
        at = name.removesuffix("weight")
        fan_in, fan_out = shapes[p.linear]
        out += [Param(at + "base_layer.weight", p.numel, p.linear),
                Param(at + "lora_A.default.weight", rank * fan_in, "lora"),
                Param(at + "lora_B.default.weight", fan_out * rank, "lora")]
        if dora:
            out.append(Param(at + "lora_magnitude_vector.default.weight", fan_out, "lora"))
    return tuple(out)
