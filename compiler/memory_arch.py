"""Memory terms of blocks beyond the dense decoder: Mamba-2 and gated linear-attention (Gated
DeltaNet) layers of hybrid stacks, gated attention outputs and vision towers.

Their weights are in the model's parameter count (``spec/catalog/blocks.py`` counts them);
here is what they keep alive during a step, priced per token like ``layer_saved_bytes`` in
``compiler/memory_peak.py``. Unmeasured (no hybrid or vision run on the CPU or an H100 yet):
formulas from the modules the accelerate launcher runs, cited per term.
"""

from __future__ import annotations

import math

from ftspec.compiler.memory_units import DTYPE_BYTES
from ftspec.spec.catalog.blocks import LinearAttentionFacts, MambaFacts, VisionFacts
from ftspec.spec.ir import ModelFacts
from ftspec.spec.model import FineTuneSpec


def mamba_mixer_saved_bytes(spec: FineTuneSpec, m: MambaFacts, hidden: int) -> float:
    """Bytes one Mamba-2 mixer keeps per token for backward.

    transformers' ``GraniteMoeHybridMambaLayer`` (``modeling_granitemoehybrid.py``; Bamba's
    mixer alike) trains through ``mamba_ssm``'s ``mamba_split_conv1d_scan_combined``, whose
    autograd function (``MambaSplitConv1dScanCombinedFn``, ``ssd_combined.py``) saves the
    in_proj output ``zxbcdt`` (2 x inner + 2 x groups x N + heads wide, compute dtype), the
    scan's output before the gate ``out_x`` (inner) and the gated norm's fp32 ``rstd`` (one
    per group); it recomputes the convolution and the normed output in backward. A trained
    in_proj (full fine-tune) also keeps its input (h).
    """
    c = DTYPE_BYTES[spec.model.dtype]
    zxbcdt = 2 * m.inner + 2 * m.n_groups * m.state_size + m.num_heads
    saved = c * (zxbcdt + m.inner) + 4.0 * m.n_groups
    if spec.method.kind == "full":
        saved += c * hidden
    return saved


def mamba_layer_saved_bytes(spec: FineTuneSpec, model: ModelFacts) -> float:
    """Bytes one Mamba-2 decoder layer keeps per token: its mixer
    (``mamba_mixer_saved_bytes``) around the norms and MLP (``_around_mixer_bytes``)."""
    assert model.mamba is not None
    return _around_mixer_bytes(spec, model) \
        + mamba_mixer_saved_bytes(spec, model.mamba, model.hidden_size)


def _around_mixer_bytes(spec: FineTuneSpec, model: ModelFacts) -> float:
    """What a hybrid stack's non-attention layer keeps per token beside its mixer: its two
    RMSNorms' fp32 inputs (2 x 4h) and the MLP as in an attention layer (gated: gate, SiLU
    and up outputs, 3cI, over routed and shared experts; a full fine-tune's projection
    inputs, c(h + I), and the norms' outputs, 2 x h in the residual's dtype). LoRA adapters
    inside these layers are not priced apart."""
    c = DTYPE_BYTES[spec.model.dtype]
    h = model.hidden_size
    inter = model.intermediate_size + model.shared_intermediate_size
    saved = 2 * 4.0 * h + (3 if model.gated_mlp else 1) * c * inter
    if spec.method.kind == "full":
        residual = 4.0 if spec.model.precision_mode == "mixed" else c
        saved += 2 * residual * h + c * (h + inter)
    return saved


DELTA_RULE_CHUNK = 64
"""Tokens per chunk of the chunked gated delta rule (``chunk_size`` of flash-linear-attention's
``chunk_gated_delta_rule``, the kernel transformers' Qwen3.5 layer trains through)."""


def linear_mixer_saved_bytes(spec: FineTuneSpec, la: LinearAttentionFacts,
                             hidden: int) -> float:
    """Bytes one Gated DeltaNet mixer keeps per token for backward.

    transformers' ``Qwen3_5GatedDeltaNet`` runs ``in_proj_qkv`` into ``causal_conv1d_fn``
    (which saves its input: c x conv_dim) and the convolution's output, split into q, k and
    v, into flash-linear-attention's ``chunk_gated_delta_rule``, whose autograd function
    saves q, k (L2-normalised in the kernel, with an fp32 reciprocal norm per key head each)
    and v (c x conv_dim + 2 x 4 x key heads), the fp32 cumulative decay g and beta (4 + c
    per value head) and the chunk's triangular WY matrix A (c x chunk per value head); it
    recomputes the chunk states in backward. The decay's softplus keeps its fp32 input (4
    per value head). The gated RMSNorm keeps the kernel's output and the gate ``z`` in fp32
    (2 x 4 x value width). A trained ``in_proj_*`` (full fine-tune) keeps its input (ch) and
    a trained ``out_proj`` the norm's output (c x value width).

    Without flash-linear-attention (the CPU, or a GPU where it is not installed)
    transformers runs its reference torch implementation of the chunked rule, which keeps
    every chunk's intermediate matrices: measured with ``saved_tensors_hooks`` on a tiny bf16
    mixer (h 64, 2 key and 4 value heads of 16, 256 tokens) it saves 9,825 bytes a token
    where this prices 1,592. That path is not priced here.
    """
    c = DTYPE_BYTES[spec.model.dtype]
    heads = la.value_heads
    saved = c * la.conv_dim * 2 + 2 * 4.0 * la.key_heads
    saved += heads * (4.0 + c + c * DELTA_RULE_CHUNK + 4.0)
    saved += 2 * 4.0 * la.value_dim
    if spec.method.kind == "full":
        saved += c * (hidden + la.value_dim)
    return saved


def linear_layer_saved_bytes(spec: FineTuneSpec, model: ModelFacts) -> float:
    """Bytes one gated linear-attention decoder layer keeps per token: its mixer
    (``linear_mixer_saved_bytes``) around the norms and MLP (``_around_mixer_bytes``)."""
    assert model.linear_attention is not None
    return _around_mixer_bytes(spec, model) \
        + linear_mixer_saved_bytes(spec, model.linear_attention, model.hidden_size)


def linear_state_buffer_bytes(spec: FineTuneSpec, la: LinearAttentionFacts, sequences: int,
                              seq_len: int) -> float:
    """Transient buffers of one gated linear-attention layer's backward: the chunked delta
    rule recomputes the state at every chunk boundary and makes its gradient, each batch x
    ceil(s / chunk) x value heads x key head x value head in the compute dtype
    (``chunk_gated_delta_rule_fwd_h`` / ``_bwd_dhu``: Yang et al. 2025, "Gated Delta
    Networks", sec. 3.3, the chunkwise form), and the causal convolution's padded input,
    conv_dim x (s + kernel - 1) per sequence."""
    c = DTYPE_BYTES[spec.model.dtype]
    chunks = math.ceil(seq_len / DELTA_RULE_CHUNK)
    states = sequences * chunks * la.value_heads * la.key_head_dim * la.value_head_dim * c
    conv = sequences * la.conv_dim * (seq_len + la.conv_kernel - 1) * c
    return 2 * states + conv


def output_gate_saved_bytes(spec: FineTuneSpec, model: ModelFacts, o_proj_trained: bool) -> float:
    """Bytes an attention output gate adds per token to an attention layer (transformers'
    ``Qwen3_5Attention``: ``attn_output * sigmoid(gate)``): the sigmoid saves its output and
    the product the attention output, reshaped to a contiguous copy (c x query width each);
    the product is ``o_proj``'s input, a new tensor it saves when it trains (full, or a LoRA
    adapter on it), where without the gate its input is a view of attention's output."""
    if not model.attn_output_gate:
        return 0.0
    c = DTYPE_BYTES[spec.model.dtype]
    q = model.num_heads * model.attn_head_dim
    return c * q * (3 if o_proj_trained else 2)


def hybrid_attention_layers(model: ModelFacts) -> tuple[int, ...] | None:
    """A hybrid stack's attention layers (Mamba-2 or gated linear attention beside them), or
    None: every layer has attention."""
    other = model.mamba or model.linear_attention
    return None if other is None else other.attention_layers


def other_layer_saved_bytes(spec: FineTuneSpec, model: ModelFacts) -> float:
    """Bytes per token of a hybrid stack's non-attention layer."""
    if model.mamba is not None:
        return mamba_layer_saved_bytes(spec, model)
    return linear_layer_saved_bytes(spec, model)


def other_layer_buffer_bytes(spec: FineTuneSpec, model: ModelFacts, sequences: int,
                             seq_len: int) -> float:
    """Transient buffers of a hybrid stack's non-attention layer while it runs."""
    if model.mamba is not None:
        return mamba_scan_buffer_bytes(spec, model.mamba, sequences, seq_len)
    assert model.linear_attention is not None
    return linear_state_buffer_bytes(spec, model.linear_attention, sequences, seq_len)


def mamba_scan_buffer_bytes(spec: FineTuneSpec, m: MambaFacts, sequences: int,
                            seq_len: int) -> float:
    """Transient buffers of one Mamba-2 layer's scan (alive while that layer runs, forward
    or backward): the SSD algorithm's inter-chunk states, fp32, batch x ceil(s / chunk) x
    heads x P x N (Dao & Gu 2024, "Transformers are SSMs", sec. 6; ``_chunk_state_fwd`` in
    ``mamba_ssm``), and the causal convolution's padded input, conv_dim x (s + kernel - 1)
    per sequence in the compute dtype (``causal_conv1d``)."""
    c = DTYPE_BYTES[spec.model.dtype]
    chunks = math.ceil(seq_len / m.chunk_size)
    states = sequences * chunks * m.num_heads * m.head_dim * m.state_size * 4.0
    conv = sequences * m.conv_dim * (seq_len + m.conv_kernel - 1) * c
    return states + conv


def image_tiles(v: VisionFacts, height: int, width: int) -> tuple[int, int]:
    """The tile grid an image is cut into: LLaVA-NeXT picks the ``image_grid_pinpoints``
    resolution that fits it best; for an image whose sides are multiples of the tile (the
    actuator's 384 x 384 and 384 x 768 sets) that is ceil(height / tile) x ceil(width /
    tile). LLaVA 1.5: one tile (the image is resized)."""
    if not v.anyres:
        return 1, 1
    return math.ceil(height / v.image_size), math.ceil(width / v.image_size)


def image_tokens(v: VisionFacts, height: int, width: int) -> int:
    """Decoder tokens one image becomes, as ``LlavaNextProcessor._get_number_of_features``
    counts them (transformers ``processing_llava_next.py``): the base tile's patches, (tile /
    patch)^2; with anyres also the grid's patches, (rows x tile / patch) x (columns x tile /
    patch), and one newline token per row of them. The unpadding of an image whose aspect
    differs from its grid is not priced (an upper bound); a class token is dropped
    (``vision_feature_select_strategy: default``)."""
    side = v.image_size // v.patch_size
    rows, cols = image_tiles(v, height, width)
    if not v.anyres:
        return side * side
    return side * side + (rows * side) * (cols * side) + rows * side


def vision_layer_saved_bytes(spec: FineTuneSpec, v: VisionFacts) -> float:
    """Bytes one encoder layer keeps per patch token when the tower trains (a full
    fine-tune; a frozen tower keeps nothing, no gradient flows into it): CLIP / SigLIP
    encoder layers (``modeling_clip.py``, ``modeling_siglip.py``) save both LayerNorms'
    inputs (2d), the q/k/v projections' shared input (d), SDPA's q, k, v and output (4d)
    and fp32 logsumexp per head, out_proj's input (d), fc1's input (d), the GELU's input
    and fc2's input (2I): c(8d + 2I) + 4 x heads."""
    c = DTYPE_BYTES[spec.model.dtype]
    return c * (8 * v.hidden_size + 2 * v.intermediate_size) + 4.0 * v.num_heads


def vision_activation_bytes(spec: FineTuneSpec, v: VisionFacts, images: int, height: int,
                            width: int) -> float:
    """What the vision tower leaves for backward at the loss: every tile's patches (base
    tile plus grid) x every layer's saved bytes, or checkpointed each layer's input (c x d
    per patch); nothing when the tower is frozen."""
    if spec.method.kind != "full":
        return 0.0
    rows, cols = image_tiles(v, height, width)
    tiles = (1 + rows * cols) if v.anyres else 1
    patches = images * tiles * (v.patches + (1 if v.class_embedding else 0))
    if spec.training.gradient_checkpointing:
        per = DTYPE_BYTES[spec.model.dtype] * v.hidden_size
    else:
        per = vision_layer_saved_bytes(spec, v)
    return patches * v.num_layers * per
