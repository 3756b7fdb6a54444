"""Memory terms of blocks beyond the dense decoder: Mamba-2 layers and vision towers.

Their weights are in the model's parameter count (``spec/catalog/blocks.py`` counts them);
here is what they keep alive during a step, priced per token like ``layer_saved_bytes`` in
``compiler/memory_peak.py``. Unmeasured (no hybrid or vision run on the CPU or an H100 yet):
formulas from the modules the accelerate launcher runs, cited per term.
"""

from __future__ import annotations

import math

from ftspec.compiler.memory_units import DTYPE_BYTES
from ftspec.spec.catalog.blocks import MambaFacts, VisionFacts
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
    """Bytes one Mamba-2 decoder layer keeps per token: its two RMSNorms' fp32 inputs
    (2 x 4h), the mixer (``mamba_mixer_saved_bytes``) and the MLP as in an attention layer
    (gated: gate, SiLU and up outputs, 3cI, over routed and shared experts; a full
    fine-tune's projection inputs, c(h + I), and the norms' outputs, 2 x h in the residual's
    dtype). LoRA adapters inside Mamba layers are not priced apart."""
    assert model.mamba is not None
    c = DTYPE_BYTES[spec.model.dtype]
    h = model.hidden_size
    inter = model.intermediate_size + model.shared_intermediate_size
    saved = 2 * 4.0 * h + mamba_mixer_saved_bytes(spec, model.mamba, h)
    saved += (3 if model.gated_mlp else 1) * c * inter
    if spec.method.kind == "full":
        residual = 4.0 if spec.model.precision_mode == "mixed" else c
        saved += 2 * residual * h + c * (h + inter)
    return saved


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
