"""The catalog's record of one model family, its parameter count from the numbers, and the
one constructor the family lists use (``models.py``, ``models_actuator.py``,
``models_recent.py``); ``models.py`` keeps the one list of them all."""

from __future__ import annotations

from dataclasses import dataclass

from ftspec.spec.catalog.blocks import (
    LinearAttentionFacts,
    MambaFacts,
    VisionFacts,
    attention_params,
    linear_attention_params,
    mamba_layer_params,
    moe_layer_count,
    vision_tower_params,
)

FUSED_MLP_LAYERS = ("GraniteMoeHybridDecoderLayer",)
"""Decoder layers whose MLP is one fused ``input_linear`` (h -> 2 x I, gate and up together)
and ``output_linear``, not ``gate_proj`` / ``up_proj`` / ``down_proj`` (transformers'
GraniteMoeHybrid ``shared_mlp``, dense Granite 4.0 included)."""

SHARED_EXPERT_MLP_LAYERS = ("Llama4TextDecoderLayer",)
"""Mixture-of-experts layers whose shared expert is a gated MLP of ``gate_proj`` /
``up_proj`` / ``down_proj`` linear layers beside the fused routed experts (transformers'
``Llama4TextMoe.shared_expert``): LoRA's gate/up/down names reach it."""

LINEAR_ROUTER_LAYERS = ("Llama4TextDecoderLayer",)
"""Mixture-of-experts layers whose router is a linear layer (``Llama4Router``, h -> experts),
which PEFT's ``all-linear`` adapts; the other MoE routers are no ``nn.Linear``."""


@dataclass(frozen=True)
class ModelFamily:
    key: str
    display: str
    params_b: float
    """Total parameters, billions (published)."""
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    """MLP inner size (per expert for mixtures of experts)."""
    vocab_size: int
    max_seq_len: int
    hf_layer_cls: str
    """Decoder layer class, for FSDP ``transformer_layer_cls_to_wrap``."""
    torchtune: tuple[str, str] | None = None
    """(config folder, size prefix) of torchtune's shipped configs."""
    torchtune_builder: str | None = None
    """Module holding torchtune's builders for custom (tiny) dimensions."""
    num_experts: int = 0
    """Mixture-of-experts: experts per MoE layer (0 for dense models)."""
    experts_per_token: int = 0
    """Mixture-of-experts: experts each token is routed to."""
    head_dim: int | None = None
    """Attention head size when it is not hidden_size / num_heads (Gemma, Qwen3)."""
    tied_embeddings: bool = False
    """The output projection shares the input embedding's weights."""
    gated_mlp: bool = True
    """Gated MLP (gate/up/down, SwiGLU/GeGLU: 3 matrices) or plain (up/down: 2)."""
    arch: str = "llama"
    """Hugging Face ``model_type``."""
    shared_intermediate_size: int = 0
    """Mixture-of-experts: a shared expert's MLP size beside the routed ones (Granite 4.0)."""
    mamba: MambaFacts | None = None
    """Hybrid Mamba-2 / attention stacks: the Mamba-2 layers."""
    vision: VisionFacts | None = None
    """Vision-language models: the image encoder and projector."""
    moe_layer_step: int = 1
    """Mixture-of-experts: every n-th layer is MoE, the others dense (Llama 4 Maverick's
    ``interleave_moe_layer_step`` 2); 1: every layer."""
    dense_intermediate_size: int = 0
    """The dense layers' MLP size where MoE and dense layers interleave
    (``intermediate_size_mlp``)."""
    linear_attention: LinearAttentionFacts | None = None
    """Hybrid gated linear-attention / attention stacks (Qwen3.5): the linear layers."""
    attn_output_gate: bool = False
    """Attention's output is gated per channel by a sigmoid of a second ``q_proj`` half."""
    source: str = ""
    """Where the numbers come from (a Hugging Face repo's config.json, a paper)."""

    @property
    def attn_head_dim(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads


def param_count(f: ModelFamily) -> float:
    """Parameters implied by the architecture numbers (biases and norms left out)."""
    h, hd = f.hidden_size, f.attn_head_dim
    attn = attention_params(h, f.num_heads, f.num_kv_heads, hd, f.attn_output_gate)
    mlp = (3 if f.gated_mlp else 2) * h * f.intermediate_size
    if f.num_experts:
        mlp = mlp * f.num_experts + h * f.num_experts  # experts + router
    mlp += 3 * h * f.shared_intermediate_size
    mlps = f.num_layers * mlp
    if f.moe_layer_step > 1:  # dense layers between the MoE ones
        moe = moe_layer_count(f.num_layers, f.moe_layer_step)
        dense = (3 if f.gated_mlp else 2) * h * f.dense_intermediate_size
        mlps = moe * mlp + (f.num_layers - moe) * dense
    embeddings = f.vocab_size * h * (1 if f.tied_embeddings else 2)
    extra = vision_tower_params(f.vision, h) if f.vision else 0.0
    if f.linear_attention is not None:
        la = f.linear_attention
        full = len(la.attention_layers)
        mixers = full * attn + (f.num_layers - full) * linear_attention_params(h, la)
        return float(mixers + mlps + embeddings) + extra
    if f.mamba is None:
        return float(f.num_layers * attn + mlps + embeddings) + extra
    attention = len(f.mamba.attention_layers)
    mixers = attention * attention_params(h, f.num_heads, f.num_kv_heads, hd) \
        + (f.num_layers - attention) * mamba_layer_params(h, f.mamba)
    return float(mixers + mlps + embeddings + extra)


def make(key: str, display: str, params_b: float, layers: int, hidden: int, heads: int, kv: int,
       inter: int, vocab: int, ctx: int, layer_cls: str, *, tt: str | None = None,
       arch: str = "llama", head_dim: int | None = None, tied: bool = False,
       plain: bool = False, experts: tuple[int, int] = (0, 0), shared: int = 0,
       mamba: MambaFacts | None = None, vision: VisionFacts | None = None,
       linear: LinearAttentionFacts | None = None, gate: bool = False,
       moe_every: tuple[int, int] = (1, 0), source: str = "") -> ModelFamily:
    folder, _, size = (tt or "").partition("/")
    return ModelFamily(
        key, display, params_b, layers, hidden, heads, kv, inter, vocab, ctx, layer_cls,
        torchtune=(folder, size) if tt else None,
        torchtune_builder=f"torchtune.models.{folder}" if tt else None,
        num_experts=experts[0], experts_per_token=experts[1], head_dim=head_dim,
        tied_embeddings=tied, gated_mlp=not plain, arch=arch, shared_intermediate_size=shared,
        mamba=mamba, vision=vision, linear_attention=linear, attn_output_gate=gate,
        moe_layer_step=moe_every[0], dense_intermediate_size=moe_every[1], source=source)
