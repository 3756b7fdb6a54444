"""Blocks beyond the dense decoder: Mamba-2 and gated linear-attention layers of hybrid stacks,
gated attention outputs and vision towers.

The numbers are ``config.json`` facts (names as transformers spells them in brackets); the
parameter formulas count what transformers builds for them, so a catalog entry's published
size can be checked against its numbers (``tests/compiler/test_catalog.py``) and a custom
``model.architecture`` gets its size from them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MambaFacts:
    """The Mamba-2 layers of a hybrid Mamba-2 / attention stack (Granite 4.0-H, Bamba)."""

    attention_layers: tuple[int, ...]
    """Indices of the attention layers (``layer_types``); every other layer is Mamba-2."""
    state_size: int
    """N, the SSM state per head and group (``mamba_d_state``)."""
    conv_kernel: int
    """Width of the causal depthwise convolution (``mamba_d_conv``)."""
    n_groups: int
    """Groups sharing B and C (``mamba_n_groups``)."""
    num_heads: int
    """SSM heads (``mamba_n_heads``)."""
    head_dim: int
    """P, channels per SSM head (``mamba_d_head``); heads x head_dim = the inner width."""
    chunk_size: int = 256
    """Tokens per chunk of the SSD scan (``mamba_chunk_size``)."""

    @property
    def inner(self) -> int:
        """The inner width (``mamba_expand`` x hidden size)."""
        return self.num_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels through the convolution: x, B and C."""
        return self.inner + 2 * self.n_groups * self.state_size


def mamba_layer_params(hidden: int, m: MambaFacts) -> float:
    """Parameters of one Mamba-2 mixer, as transformers' ``GraniteMoeHybridMambaLayer`` (and
    ``BambaMixer``) builds it, biases left out like the catalog's other counts: ``in_proj``
    h -> (z, x, B, C, dt) = 2 x inner + 2 x groups x N + heads; the depthwise ``conv1d``,
    conv_dim x kernel; ``dt_bias``, ``A_log`` and ``D``, one per head; the gated RMSNorm's
    weight (inner); ``out_proj`` inner -> h (Dao & Gu 2024, "Transformers are SSMs", sec. 7.1:
    the parallel Mamba-2 block)."""
    in_proj = hidden * (2 * m.inner + 2 * m.n_groups * m.state_size + m.num_heads)
    conv = m.conv_dim * m.conv_kernel
    return float(in_proj + conv + 3 * m.num_heads + m.inner + m.inner * hidden)


def attention_params(hidden: int, heads: int, kv_heads: int, head_dim: int,
                     output_gate: bool = False) -> float:
    """q and o (h x heads x head size each), k and v (h x KV heads x head size each); an
    output gate (``attn_output_gate``: Qwen3.5, Qwen3-Next) widens ``q_proj`` to twice the
    query width, the second half a per-channel sigmoid gate on attention's output."""
    q = heads * head_dim
    return float((3 if output_gate else 2) * hidden * q + 2 * hidden * kv_heads * head_dim)


def moe_layer_count(num_layers: int, step: int) -> int:
    """Mixture-of-experts layers of a stack that interleaves them with dense ones: every
    ``step``-th layer, the last of each group (transformers' Llama 4 ``moe_layers`` default:
    ``range(step - 1, layers, step)``); step 1: every layer."""
    return len(range(step - 1, num_layers, step))


@dataclass(frozen=True)
class LinearAttentionFacts:
    """The gated linear-attention layers of a hybrid stack (Gated DeltaNet: Yang, Kautz &
    Hatamizadeh 2025, "Gated Delta Networks"; Qwen3.5, Qwen3-Next), from the ``linear_*``
    numbers of its config.json."""

    attention_layers: tuple[int, ...]
    """Indices of the full-attention layers (``layer_types``); every other layer is linear."""
    key_heads: int
    """Query / key heads (``linear_num_key_heads``)."""
    value_heads: int
    """Value heads (``linear_num_value_heads``): one decay and one beta each."""
    key_head_dim: int
    """``linear_key_head_dim``."""
    value_head_dim: int
    """``linear_value_head_dim``."""
    conv_kernel: int = 4
    """Width of the causal depthwise convolution over q, k and v (``linear_conv_kernel_dim``)."""

    @property
    def key_dim(self) -> int:
        return self.key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.value_heads * self.value_head_dim

    @property
    def conv_dim(self) -> int:
        """Channels through the convolution: q, k and v."""
        return 2 * self.key_dim + self.value_dim


def linear_attention_params(hidden: int, la: LinearAttentionFacts) -> float:
    """Parameters of one Gated DeltaNet mixer in its weight matrices, as transformers'
    ``Qwen3_5GatedDeltaNet`` builds it: ``in_proj_qkv`` h -> 2 x key + value width,
    ``in_proj_z`` (the output gate) h -> value width, ``in_proj_b`` and ``in_proj_a`` h ->
    value heads each, the depthwise ``conv1d`` (conv_dim x kernel) and ``out_proj`` value
    width -> h. The per-head ``dt_bias`` and ``A_log`` and the gated norm's weight are left
    out, as norms and biases are."""
    return float(hidden * la.conv_dim + hidden * la.value_dim + 2 * hidden * la.value_heads
                 + la.conv_dim * la.conv_kernel + la.value_dim * hidden)


@dataclass(frozen=True)
class VisionFacts:
    """A vision-language model's image encoder and projector (LLaVA, LLaVA-NeXT)."""

    hidden_size: int
    num_layers: int
    intermediate_size: int
    """The encoder MLP's inner size (plain GELU MLP: fc1, fc2)."""
    num_heads: int
    patch_size: int
    image_size: int
    """The encoder's input tile, pixels a side."""
    feature_layers: int = 1
    """Encoder layers whose outputs are concatenated into the projector's input
    (``vision_feature_layer``: one index, or a list as Granite Vision's four)."""
    anyres: bool = False
    """LLaVA-NeXT's any-resolution tiling (``image_grid_pinpoints``): a base tile plus a
    grid of tiles, one newline token per row; False: one tile (LLaVA 1.5)."""
    class_embedding: bool = False
    """The encoder prepends a class token (CLIP); SigLIP has none."""

    @property
    def patches(self) -> int:
        """Patch tokens per tile: (image_size // patch_size)^2."""
        side = self.image_size // self.patch_size
        return side * side


def vision_tower_params(v: VisionFacts, text_hidden: int) -> float:
    """Encoder and projector parameters: the patch embedding (3 x patch^2 x d, a stride-p
    convolution) and one position embedding per patch (+ class token), every encoder layer's
    attention (4 d^2) and plain MLP (2 d x I), and LLaVA's two-layer projector
    (``LlavaMultiModalProjector``: linear_1 from feature_layers x d to the text width,
    linear_2 text -> text). Biases and norms left out."""
    d = v.hidden_size
    patch_embed = 3 * v.patch_size * v.patch_size * d
    positions = (v.patches + (1 if v.class_embedding else 0)) * d
    layers = v.num_layers * (4 * d * d + 2 * d * v.intermediate_size)
    projector = v.feature_layers * d * text_hidden + text_hidden * text_hidden
    return float(patch_embed + positions + layers + projector)
