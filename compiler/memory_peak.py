"""The step's peak: the decoder layers' saved tensors (activations) and the loss head's (logits).

The terms ``compiler/memory.py`` adds on top of the training state (weights, gradients,
optimizer state); its docstring lists every term and where each was measured. Split out of
it so each moment of the step (the loss, the end of backward, a tied embedding's last
gradient) and each tensor group can be priced and tested alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ftspec.compiler.memory_arch import (
    hybrid_attention_layers,
    image_tokens,
    other_layer_buffer_bytes,
    other_layer_saved_bytes,
    output_gate_saved_bytes,
    vision_activation_bytes,
)
from ftspec.compiler.memory_units import DTYPE_BYTES
from ftspec.spec.ir import ModelFacts
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.method import LORA_FAMILY
from ftspec.spec.platforms import LAUNCHER_FACTS

TRL_TOKEN_CHUNK = 4096
"""``trl.kernels.chunked_logprob.TOKEN_CHUNK_SIZE``: tokens per fused-head tile."""
TRL_VOCAB_CHUNK = 32768
"""``trl.trainer.utils._CHUNKED_LOGPROB_CHUNK_SIZE``: vocabulary entries per tile."""
CPU_TILE_FP32 = 7.25
"""fp32 tile-sized tensors alive at once in TRL's torch fold of a tile (devices without
Triton: the CPU), counted from ``trl.kernels.chunked_logprob._backward_tile``: five locals
(upcast, scaled logits, log p, p, gradient), the target mask (0.25) and two temporaries."""


CHUNKS = 8
"""torchtune's ``CEWithChunkedOutputLoss`` default ``num_output_chunks``."""


def logits_bytes_per_element(spec: FineTuneSpec) -> float:
    """Bytes held per logit (b x s x vocab) at the loss's peak, on torchtune (the accelerate
    launcher never builds the logits: see ``fused_head_bytes``).

    torchtune's decoder upcasts its whole output (``output(h).float()``; the 16-bit tensor is
    freed at once) and the recipe drops the logits once the loss is taken, so the fp32
    log-softmax that ``F.cross_entropy`` saves is what the forward leaves (4 bytes). Its
    backward is the peak: ``nll_loss``'s fp32 gradient and ``log_softmax``'s fp32 gradient are
    made while the saved log-softmax is still alive: 4 + 4 + 4 = 12, in 16 bits and in fp32
    alike. ``CEWithChunkedOutputLoss`` peaks in the forward instead: every chunk's 16-bit
    logits are alive until the loss returns, every chunk's fp32 log-softmax is saved, and one
    chunk of ``CHUNKS`` is upcast at a time: 2 + 4 + 4 / 8 in 16 bits (its backward, one
    chunk at a time, stays below), 4 + 4 in fp32 (``float()`` of an fp32 chunk is the chunk).
    """
    low = spec.model.dtype != "fp32"
    if spec.training.loss == "chunked_cross_entropy":
        return 2.0 + 4.0 + 4.0 / CHUNKS if low else 8.0
    return 12.0


def fused_head_bytes(spec: FineTuneSpec, model: ModelFacts, tokens: float,
                      head_trained: bool) -> tuple[float, float]:
    """TRL's fused LM head: (bytes at its backward's peak, its largest single tensor).

    TRL 1.16's ``SFTTrainer`` patches the model with ``trl.trainer.utils.add_fused_lm_head``
    and its ``compute_loss`` calls it with ``fused_lm_head=True`` whenever no
    ``compute_loss_func`` or label smoother is set (ftspec's entrypoint sets neither):
    ``ChunkedLogProbFunction`` (``trl/kernels/chunked_logprob.py``) projects
    ``TOKEN_CHUNK_SIZE`` (4096) tokens x ``_CHUNKED_LOGPROB_CHUNK_SIZE`` (32768) vocabulary
    entries at a time into one reused compute-dtype tile, and never builds the logits
    (measured on the CPU: no tensor as wide as the vocabulary is ever made,
    bench/results/cpu_memory-*.md). Its backward holds that tile, the hidden-state gradient
    in fp32 (tokens x h x 4), the gathered hidden states it saved (tokens x h x compute
    bytes) and, when the LM head's weight trains (a full fine-tune; tied to the embedding or
    not), the weight's gradient accumulated in fp32 (V x h x 4) and its cast to the weight's
    dtype at return. Without Triton (the CPU) each tile is folded by torch ops
    (``_backward_tile``), whose locals are fp32 tiles: the upcast, the scaled logits, log p,
    p and the gradient, with the target mask (1 byte) and the two temporaries of the
    gradient's product: 7.25 x 4 bytes per tile element; then ``_addmm_fp32`` upcasts the
    tile and the weight's chunk (32768 x h) for the hidden states' gradient: 4 bytes each.
    The larger of the two, freed before the cast.
    """
    h = model.hidden_size
    compute = DTYPE_BYTES[spec.model.dtype]
    tile_elements = min(tokens, TRL_TOKEN_CHUNK) * min(model.vocab_size, TRL_VOCAB_CHUNK)
    tile = tile_elements * compute
    held = tile + tokens * h * (4.0 + compute)
    largest = tile
    folded = 0.0
    if spec.resources.total_gpus == 0:  # no Triton: torch folds the tiles
        chunk = min(model.vocab_size, TRL_VOCAB_CHUNK)
        folded = max(tile_elements * CPU_TILE_FP32 * 4.0,
                     tile_elements * 4.0 + chunk * h * 4.0)
    cast = 0.0
    if head_trained:
        load = 4.0 if spec.model.precision_mode == "mixed" else compute
        fp32_grad = model.vocab_size * h * 4.0
        held += fp32_grad
        cast = model.vocab_size * h * load
        largest = max(largest, fp32_grad)
    return held + max(folded, cast), max(largest, tile_elements * 4.0 if folded else 0.0)


def layer_saved_bytes(spec: FineTuneSpec, model: ModelFacts, lora_modules: tuple[str, ...],
                      adapter_bytes: float) -> float:
    """Bytes autograd keeps per token in one decoder layer between its forward and backward.

    What transformers 5.23's Llama / Qwen layers and torchtune 0.6.1's
    ``TransformerSelfAttentionLayer`` save (``torch.autograd.graph.saved_tensors_hooks``
    over a real layer: tests/compiler/test_memory_saved.py), with c the compute dtype's
    bytes and h, q, kv, I the hidden, query, key/value and MLP widths:

    - the two RMSNorms upcast their input to fp32 and save it (``pow``, ``mul``): 2 x 4h;
      when their weight trains (full), the normalised input too: in the residual's dtype on
      transformers (``hidden_states.to(input_dtype)``: c, fp32 under mixed), in fp32 on
      torchtune (``x_normed``): 2 x 4h there;
    - trained projections save their input (full): the two norm outputs feed q/k/v and
      gate/up, one tensor each (2ch; under autocast every projection casts its own copy: 5ch),
      and down_proj's input (cI); o_proj's input is a view of attention's output;
    - SDPA (flash / memory-efficient) saves q, k, v, its output and an fp32 logsumexp per
      head: c(2q + 2kv) + 4 x heads on transformers (grouped-query attention passed to the
      kernel, ``use_gqa_in_sdpa``), c x 4q on torchtune (it expands k and v to every head);
    - the gated MLP saves gate's output (SiLU's input), SiLU's output and up's output: 3cI
      (a plain MLP: the activation's input, cI);
    - LoRA: each adapted projection's ``lora_A`` saves its input and ``lora_B`` the rank-r
      middle. PEFT's adapters in fp32 (``autocast_adapter_dtype``) over a 16-bit model cast
      the input per projection (``_cast_input_dtype``): 4 x width each, q, k and v each their
      own copy; under autocast (mixed, or autocast over bf16 weights) each ``lora_A`` saves
      its own c copy; where adapter and input share a dtype (torchtune, QLoRA) the input is
      the norm output / down_proj's input, saved once.

    ``precision: autocast`` saves what pure saves except at the adapters: its weights and
    residual are already in c, so autocast makes no copy of a projection's input (a full
    fine-tune saves the same bytes), and torch's CPU and CUDA autocast lists leave SiLU,
    SDPA and the matmuls in c while transformers upcasts the RMSNorms and the loss itself;
    only PEFT's fp32 adapters see their input cast back to c (measured by the same test).
    """
    h = model.hidden_size
    heads = model.num_heads
    q = heads * model.attn_head_dim
    kv = model.num_kv_heads * model.attn_head_dim
    inter = model.intermediate_size
    c = DTYPE_BYTES[spec.model.dtype]
    mixed = spec.model.precision_mode == "mixed"
    autocasts = spec.model.autocasts
    tune = LAUNCHER_FACTS[spec.launcher].memory_profile == "torchtune"
    full = spec.method.kind == "full"
    saved = 2 * 4.0 * h
    if full:
        saved += 2 * (4.0 if tune else (4.0 if mixed else c)) * h
        saved += (5 if mixed else 2) * c * h + c * inter
    saved += c * 4 * q if tune else c * (2 * q + 2 * kv)
    saved += 4.0 * heads
    saved += output_gate_saved_bytes(
        spec, model, full or (spec.method.kind in LORA_FAMILY and "o_proj" in lora_modules))
    saved += (3 if model.gated_mlp else 1) * c * inter
    if model.shared_intermediate_size:  # a shared expert beside the routed ones
        saved += (3 if model.gated_mlp else 1) * c * model.shared_intermediate_size
    if spec.method.kind in LORA_FAMILY:
        rank = spec.method.lora_settings.rank
        widths = {"q_proj": h, "k_proj": h, "v_proj": h, "o_proj": q,
                  "gate_proj": h, "up_proj": h, "down_proj": inter}
        adapted = [m for m in lora_modules if m in widths
                   and (model.gated_mlp or m != "gate_proj")]
        if autocasts or adapter_bytes != c:  # one cast copy per adapted projection
            each = c if autocasts else adapter_bytes
            saved += sum(each * (widths[m] + rank) for m in adapted)
        else:  # the adapter reads the input the model already has: saved once
            saved += c * rank * len(adapted)
            if {"q_proj", "k_proj", "v_proj"} & set(adapted):
                saved += c * h
            if {"gate_proj", "up_proj"} & set(adapted):
                saved += c * h
            if "down_proj" in adapted:
                saved += c * inter
    return saved


def layer_backward_bytes(spec: FineTuneSpec, model: ModelFacts, lora_modules: tuple[str, ...],
                          adapter_bytes: float) -> float:
    """Gradients in flight inside one layer's backward, per token: at down_proj the
    gradients of its input from the base weight and from the adapter, and their sum, all MLP
    wide: 2 x cI + I x the adapter path's bytes (fp32 for PEFT's upcast adapters); I the
    wider of an MoE layer's and an interleaved dense layer's MLP."""
    c = DTYPE_BYTES[spec.model.dtype]
    adapted = spec.method.kind in LORA_FAMILY and "down_proj" in lora_modules
    via = adapter_bytes if adapted else c
    return max(model.intermediate_size, model.dense_intermediate_size) * (2 * c + via)


@dataclass(frozen=True)
class Peak:
    activations: float
    logits: float
    gradients: float
    largest: float
    """The largest single tensor alive then (what the allocator's slack is priced on)."""
    phase: str

    @property
    def total(self) -> float:
        return self.activations + self.logits + self.gradients


def step_tokens(spec: FineTuneSpec, model: ModelFacts, micro_batch: int) -> float:
    """Tokens per device per forward: micro batch x ``data.max_seq_len`` (null: as long as
    the model allows); a vision-language model's sequence holds at least one image's tokens
    (``image_tokens`` at the tower's own tile size: ftspec has no image-size field yet)."""
    s = spec.data.max_seq_len or model.context_len
    if model.vision is not None:
        v = model.vision
        s = max(s, image_tokens(v, v.image_size, v.image_size))
    return float(micro_batch * s)


def checkpoint_bytes(spec: FineTuneSpec, model: ModelFacts, tokens: float) -> float:
    """Every layer's input kept by activation checkpointing: tokens x h in the residual's
    dtype (fp32 under mixed precision), once per layer."""
    c = DTYPE_BYTES[spec.model.dtype]
    residual = 4.0 if spec.model.precision_mode == "mixed" else c
    return residual * model.hidden_size * tokens * model.num_layers


def stored_activations(spec: FineTuneSpec, model: ModelFacts, layer: float,
                       tokens: float) -> float:
    """What the layers leave for backward at the loss (``layer``: one layer's saved bytes
    for these tokens): every layer's saved tensors, or checkpointed every layer's input, or
    nothing on the device when offloaded; plus, around the layers, the final norm's fp32
    input and the head's input ((4 + c) x h per token)."""
    t = spec.training
    c = DTYPE_BYTES[spec.model.dtype]
    if t.activation_offloading:
        stored = 0.0  # the checkpoints sit in CPU memory
    elif t.gradient_checkpointing:
        stored = checkpoint_bytes(spec, model, tokens)
    elif (attention_layers := hybrid_attention_layers(model)) is None:
        stored = layer * model.num_layers
    else:  # hybrid: attention layers and Mamba-2 / linear layers keep different tensors
        attention = len(attention_layers)
        stored = layer * attention + other_layer_saved_bytes(spec, model) * tokens \
            * (model.num_layers - attention)
    return stored + (4.0 + c) * model.hidden_size * tokens


def one_layer_bytes(spec: FineTuneSpec, model: ModelFacts, layer: float, tokens: float,
                    micro_batch: int) -> float:
    """The widest single layer's saved tensors while its backward runs (``layer``: an
    attention layer's): in a hybrid stack a Mamba-2 or gated linear-attention layer's, with
    its scan's transient buffers (``other_layer_buffer_bytes``), may be wider."""
    if hybrid_attention_layers(model) is None:
        return layer
    other = other_layer_saved_bytes(spec, model) * tokens + other_layer_buffer_bytes(
        spec, model, micro_batch, int(tokens) // micro_batch)
    return max(layer, other)


def loss_head(spec: FineTuneSpec, model: ModelFacts, tokens: float) -> tuple[float, float]:
    """The loss head's bytes at the loss and its largest tensor: torchtune's logits
    (``logits_bytes_per_element`` per logit; the largest an fp32 chunk, or all of them
    unchunked), TRL's fused LM head (``fused_head_bytes``)."""
    if LAUNCHER_FACTS[spec.launcher].memory_profile == "torchtune":
        logits = tokens * model.vocab_size * logits_bytes_per_element(spec)
        chunked = spec.training.loss == "chunked_cross_entropy"
        largest = tokens * model.vocab_size * 4.0 / (CHUNKS if chunked else 1)
        return logits, largest
    return fused_head_bytes(spec, model, tokens, head_trained=spec.method.kind == "full")


def step_peak(spec: FineTuneSpec, model: ModelFacts, lora_modules: tuple[str, ...], *,
              micro_batch: int, adapter_bytes: float, gradients: float,
              gradients_persist: bool, tied_gradient: float = 0.0) -> Peak:
    """The moments a step can peak at, and the largest.

    - the loss: every layer's saved tensors (or, checkpointed, every layer's input) are
      alive, and the loss head holds its transient (torchtune's log-softmax backward, TRL's
      fused head). A full fine-tune's gradients do not exist yet: both launchers drop them
      after each step (``zero_grad(set_to_none=True)``) unless they persist (accumulation,
      DDP's buckets, DeepSpeed's partitions);
    - the end of backward: every gradient made, one layer's saved tensors (recomputed under
      checkpointing) and its backward's gradients in flight, on top of the checkpoints;
    - with an embedding tied to the LM head and trained (``tied_gradient``: its gradient's
      bytes), the very end: autograd sums the head's and the embedding lookup's gradients
      before accumulating the weight's, so every other gradient is made and the two
      contributions and their sum are alive (3 x V x h; counted with the loss head's
      tensors, ``logits``). Measured on the CPU with a 262144-entry vocabulary.
    """
    tokens = step_tokens(spec, model, micro_batch)
    c = DTYPE_BYTES[spec.model.dtype]
    t = spec.training
    layer = layer_saved_bytes(spec, model, lora_modules, adapter_bytes) * tokens
    backward = layer_backward_bytes(spec, model, lora_modules, adapter_bytes) * tokens
    logits, largest = loss_head(spec, model, tokens)
    activations = stored_activations(spec, model, layer, tokens)
    if model.vision is not None:  # one image per example, at the tower's tile size
        v = model.vision
        activations += vision_activation_bytes(spec, v, micro_batch, v.image_size, v.image_size)
    at_loss = Peak(activations, logits, gradients if gradients_persist else 0.0, largest, "loss")
    kept = t.gradient_checkpointing and not t.activation_offloading
    end_stored = (checkpoint_bytes(spec, model, tokens) if kept else 0.0) \
        + one_layer_bytes(spec, model, layer, tokens, micro_batch) + backward
    widest = max(c, adapter_bytes if spec.method.kind in LORA_FAMILY else c)
    at_end = Peak(end_stored, 0.0, gradients, model.intermediate_size * tokens * widest,
                  "backward")
    moments = [at_loss, at_end]
    if tied_gradient:
        moments.append(Peak(0.0, 3 * tied_gradient, gradients - tied_gradient,
                            tied_gradient, "embedding"))
    return max(moments, key=lambda m: m.total)
