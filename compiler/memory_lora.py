"""LoRA's trainable parameters: the adapters PEFT (or torchtune) puts on a model's linear layers.

Counted from the architecture numbers rather than by building the model: ``validate`` and
``plan`` must stay fast and load no torch; tests/compiler/test_memory_moe_lora.py checks the
count against PEFT on tiny models of the catalog's mixture-of-experts architectures.
"""

from __future__ import annotations

from ftspec.spec.ir import ModelFacts

MLP_MODULES = ("gate_proj", "up_proj", "down_proj")


def lora_trainable_params(model: ModelFacts, modules: tuple[str, ...], rank: int,
                          all_linear: bool = False) -> float:
    """Parameters of LoRA adapters: r x (in + out) for every adapted linear layer.

    Shapes come from the architecture numbers: query/output width heads x head size (not
    always the hidden size: Gemma, Qwen3), key/value width KV heads x head size, and MLP
    projections (dense models only). In a hybrid stack only the attention layers have
    q/k/v/o projections.

    Mixtures of experts get no MLP adapters: transformers 5 stores the experts of every
    catalog MoE architecture (Mixtral, Qwen3-MoE, gpt-oss, Granite MoE and MoE-hybrid) as
    fused 3-D parameters (``experts.gate_up_proj`` / ``experts.down_proj``), not
    ``nn.Linear`` layers, so PEFT's LoRA reaches none of them, neither by ``all-linear``
    nor by ``gate_proj`` / ``up_proj`` / ``down_proj``; the router is no ``nn.Linear``
    either. ``all_linear`` (PEFT's ``all-linear``, not torchtune's) also adapts a hybrid
    stack's Mamba-2 projections and a shared expert's MLP (``_all_linear_extra``).
    tests/compiler/test_memory_moe_lora.py compares with PEFT.
    """
    h = model.hidden_size
    q = model.num_heads * model.attn_head_dim
    kv = model.num_kv_heads * model.attn_head_dim
    inter = model.intermediate_size
    shapes = {
        "q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
        "gate_proj": (h, inter), "up_proj": (h, inter), "down_proj": (inter, h),
    }
    attention = mlp = 0
    for name, (i, o) in shapes.items():
        if name in reached_modules(model, modules) and (model.gated_mlp or name != "gate_proj"):
            if name in MLP_MODULES:
                mlp += rank * (i + o)
            else:
                attention += rank * (i + o)
    extra = _all_linear_extra(model, rank) if all_linear else 0.0
    return float(attention * _attention_layers(model) + mlp * model.num_layers) + extra


def _all_linear_extra(model: ModelFacts, rank: int) -> float:
    """What PEFT's ``all-linear`` adapts beyond the q/k/v/o and gate/up/down names: each
    Mamba-2 layer's ``in_proj`` (h -> 2 x inner + 2 x groups x N + heads) and ``out_proj``
    (inner -> h), and a MoE's shared-expert MLP in every layer (``input_linear``
    h -> 2 x S, ``output_linear`` S -> h; transformers' GraniteMoeHybrid)."""
    h = model.hidden_size
    extra = 0.0
    if model.mamba is not None:
        m = model.mamba
        in_out = 2 * m.inner + 2 * m.n_groups * m.state_size + m.num_heads
        mamba_layers = model.num_layers - len(m.attention_layers)
        extra += mamba_layers * rank * ((h + in_out) + (m.inner + h))
    shared = model.shared_intermediate_size
    if shared and model.num_experts:
        extra += model.num_layers * rank * ((h + 2 * shared) + (shared + h))
    return extra


def reached_modules(model: ModelFacts, modules: tuple[str, ...]) -> tuple[str, ...]:
    """The LoRA target modules PEFT finds on the model: a mixture of experts' MLP
    projections are fused 3-D expert parameters that LoRA does not reach."""
    if not model.num_experts:
        return modules
    return tuple(m for m in modules if m not in MLP_MODULES)


def _attention_layers(model: ModelFacts) -> int:
    """Layers with attention projections: all of them, or a hybrid stack's attention ones."""
    return model.num_layers if model.mamba is None else len(model.mamba.attention_layers)
