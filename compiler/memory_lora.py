"""LoRA's trainable parameters: the adapters PEFT (or torchtune) puts on a model's linear layers.

Counted from the architecture numbers rather than by building the model: ``validate`` and
``plan`` must stay fast and load no torch; tests/compiler/test_memory_moe_lora.py checks the
count against PEFT on tiny models of the catalog's mixture-of-experts and Granite 4.0
architectures, with and without DoRA.
"""

from __future__ import annotations

from ftspec.spec.catalog.blocks import moe_layer_count
from ftspec.spec.catalog.family import (
    FUSED_MLP_LAYERS,
    LINEAR_ROUTER_LAYERS,
    SHARED_EXPERT_MLP_LAYERS,
)
from ftspec.spec.ir import ModelFacts
from ftspec.spec.module_names import MLP_MODULES


def lora_trainable_params(model: ModelFacts, modules: tuple[str, ...], rank: int,
                          all_linear: bool = False, dora: bool = False) -> float:
    """Parameters of LoRA adapters: r x (in + out) for every adapted linear layer, plus
    DoRA's magnitude vector (one per output feature of each adapted layer, PEFT's
    ``lora_magnitude_vector``) when ``dora``.

    Shapes come from the architecture numbers: query/output width heads x head size (not
    always the hidden size: Gemma, Qwen3), key/value width KV heads x head size, and MLP
    projections (dense models only). In a hybrid stack only the attention layers have
    q/k/v/o projections; an attention output gate doubles ``q_proj``'s output.

    Mixtures of experts get no MLP adapters: transformers 5 stores the experts of every
    catalog MoE architecture (Mixtral, Qwen3-MoE, gpt-oss, Granite MoE and MoE-hybrid) as
    fused 3-D parameters (``experts.gate_up_proj`` / ``experts.down_proj``), not
    ``nn.Linear`` layers, so PEFT's LoRA reaches none of them, neither by ``all-linear``
    nor by ``gate_proj`` / ``up_proj`` / ``down_proj``; the router is no ``nn.Linear``
    either. Llama 4's shared expert beside them is a gated MLP the gate/up/down names do
    reach (``SHARED_EXPERT_MLP_LAYERS``), and its router is linear (``LINEAR_ROUTER_LAYERS``);
    where dense layers interleave with the MoE ones (Maverick), the names reach the dense
    layers' MLP (``dense_intermediate_size``) there.
    Granite 4.0's MLP (dense models too) is ``shared_mlp.input_linear`` /
    ``output_linear``, which the gate/up/down names do not reach either
    (``FUSED_MLP_LAYERS``). ``all_linear`` (PEFT's ``all-linear``, not torchtune's) also
    adapts a hybrid stack's Mamba-2 projections, that shared MLP and a linear router
    (``_all_linear_extra``). tests/compiler/test_memory_moe_lora.py compares with PEFT.
    """
    h = model.hidden_size
    q = model.num_heads * model.attn_head_dim
    kv = model.num_kv_heads * model.attn_head_dim
    inter = model.shared_intermediate_size if model.num_experts else model.intermediate_size
    shapes = {
        "q_proj": (h, 2 * q if model.attn_output_gate else q), "k_proj": (h, kv),
        "v_proj": (h, kv), "o_proj": (q, h),
        "gate_proj": (h, inter), "up_proj": (h, inter), "down_proj": (inter, h),
    }
    attention = mlp = dense = 0
    reached = reached_modules(model, modules)
    for name, (i, o) in shapes.items():
        if name in reached and (model.gated_mlp or name != "gate_proj"):
            if name in MLP_MODULES:
                mlp += _adapter(rank, i, o, dora)
                d = model.dense_intermediate_size
                dense += _adapter(rank, *((d, h) if name == "down_proj" else (h, d)), dora)
            else:
                attention += _adapter(rank, i, o, dora)
    extra = _all_linear_extra(model, rank, dora) if all_linear else 0.0
    moe = moe_layer_count(model.num_layers, model.moe_layer_step)
    mlps = mlp * model.num_layers if model.moe_layer_step == 1 else \
        mlp * moe + dense * (model.num_layers - moe)  # dense layers between the MoE ones
    return float(attention * attention_layers(model) + mlps) + extra


def _adapter(rank: int, fan_in: int, fan_out: int, dora: bool) -> int:
    """One adapted linear layer: A (r x in) and B (out x r), and DoRA's magnitude (out)."""
    return rank * (fan_in + fan_out) + (fan_out if dora else 0)


def _all_linear_extra(model: ModelFacts, rank: int, dora: bool) -> float:
    """What PEFT's ``all-linear`` adapts beyond the q/k/v/o and gate/up/down names: each
    Mamba-2 layer's ``in_proj`` (h -> 2 x inner + 2 x groups x N + heads) and ``out_proj``
    (inner -> h), a fused shared MLP in every layer (``input_linear`` h -> 2 x S,
    ``output_linear`` S -> h; transformers' GraniteMoeHybrid: beside the experts, or the
    whole MLP of a dense Granite 4.0, S its intermediate size), a linear router in every
    layer (h -> experts), and each gated linear-attention layer's ``in_proj_qkv`` (h -> 2 x
    key + value width), ``in_proj_z`` (h -> value width), ``in_proj_b`` / ``in_proj_a`` (h ->
    value heads) and ``out_proj`` (value width -> h); its ``conv1d`` is no linear layer."""
    h = model.hidden_size
    extra = 0.0
    if model.mamba is not None:
        m = model.mamba
        in_out = 2 * m.inner + 2 * m.n_groups * m.state_size + m.num_heads
        mamba_layers = model.num_layers - len(m.attention_layers)
        extra += mamba_layers * (_adapter(rank, h, in_out, dora)
                                 + _adapter(rank, m.inner, h, dora))
    if model.linear_attention is not None:
        la = model.linear_attention
        linear_layers = model.num_layers - len(la.attention_layers)
        extra += linear_layers * (
            _adapter(rank, h, la.conv_dim, dora) + _adapter(rank, h, la.value_dim, dora)
            + 2 * _adapter(rank, h, la.value_heads, dora)
            + _adapter(rank, la.value_dim, h, dora))
    if model.hf_layer_cls in FUSED_MLP_LAYERS:
        shared = model.shared_intermediate_size if model.num_experts else \
            model.intermediate_size
        extra += model.num_layers * (_adapter(rank, h, 2 * shared, dora)
                                     + _adapter(rank, shared, h, dora))
    if model.num_experts and model.hf_layer_cls in LINEAR_ROUTER_LAYERS:
        extra += moe_layer_count(model.num_layers, model.moe_layer_step) \
            * _adapter(rank, h, model.num_experts, dora)
    return extra


def reached_modules(model: ModelFacts, modules: tuple[str, ...]) -> tuple[str, ...]:
    """The LoRA target modules PEFT finds on the model: a mixture of experts' MLP
    projections are fused 3-D expert parameters that LoRA does not reach (a Llama 4 shared
    expert's gate/up/down it does), and a Granite 4.0 MLP has no gate/up/down projections."""
    if model.hf_layer_cls in SHARED_EXPERT_MLP_LAYERS and model.shared_intermediate_size:
        return modules
    if not model.num_experts and model.hf_layer_cls not in FUSED_MLP_LAYERS:
        return modules
    return tuple(m for m in modules if m not in MLP_MODULES)


def attention_layers(model: ModelFacts) -> int:
    """Layers with attention projections: all of them, or a hybrid stack's attention ones."""
    hybrid = model.mamba or model.linear_attention
    return model.num_layers if hybrid is None else len(hybrid.attention_layers)
