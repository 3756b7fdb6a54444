"""Peak GPU memory per device: weights, gradients, optimizer state, activations, logits.

Priced by what each launcher really allocates under ``model.precision``. Written here, not
taken from a library: none prices a training step per launcher (accelerate's
``estimate-memory`` counts weights and optimizer state only). Terms:
- weights: parameters x the bytes they load in: ``dtype`` under pure precision (2 for
  bf16/fp16, 4 for fp32), 4 under mixed (TRL loads fp32 master weights; autocast also caches
  a ``dtype`` copy of every trainable weight for the forward: + 2 per trainable parameter);
  bits/8 plus quantization constants for 4/8-bit bases (~0.52 bytes for NF4 with double
  quantization, Dettmers et al. 2023, "QLoRA", sec. 3). Divided by the shard count when FSDP
  full_shard or ZeRO-3 shard them. Under mixed precision with adapters, autocast casts the
  frozen fp32 projections at every call and autograd keeps each 16-bit copy for backward:
  + 2 bytes per layer parameter, every layer (one when checkpointed);
- trainable parameters keep their own dtype: a full fine-tune trains the loaded weights;
  adapters are in ``dtype`` on torchtune (its recipes check it), in fp32 on TRL (PEFT's
  ``autocast_adapter_dtype``; ZeRO-3 keeps the base dtype) and in bf16 on TRL over a
  quantized base (SFTTrainer casts them, as the QLoRA paper does);
- gradients: trainable parameters x their bytes, sharded by FSDP or ZeRO >= 2;
- optimizer: trainable parameters x state tensors x their bytes: torch optimizers keep
  state like the parameter (pure bf16 AdamW: 2 x 2 bytes; mixed: 2 x 4), 8-bit optimizers
  1 byte per moment, bitsandbytes' 32-bit ones 4. So a full fine-tune costs 2 + 2 + 4 = 8
  bytes per parameter in pure bf16, 4 + 2 + 4 + 8 = 18 in mixed (ZeRO's 16, Rajbhandari et
  al. 2020, sec. 3.1, keeps 16-bit gradients; autocast does not). Sharded by FSDP or
  ZeRO >= 1 (the ZeRO paper's stages 1/2/3 = optimizer / + gradients / + parameters); zero on
  the device when offloaded (FSDP cpu_offload offloads parameters too: only the layers being
  gathered stay);
- the step's peak (``_peak``): the larger of two moments, priced from what the installed
  libraries keep alive (transformers 5.23, PEFT 0.18, TRL 1.16, torchtune 0.6.1):
  - at the loss: every layer's saved tensors (``layer_saved_bytes``: RMSNorm fp32 upcasts,
    projection inputs, SDPA's q / k / v / output / logsumexp, the gated MLP's gate, SiLU and
    up outputs, PEFT's fp32 input copies), or under checkpointing each layer's input, plus
    the loss head (``logits``): torchtune's log-softmax backward, 12 bytes per logit, or
    its chunked loss' forward (``logits_bytes_per_element``); TRL's fused LM head, which
    never builds the logits (``_fused_head_bytes``). A full fine-tune's gradients do not
    exist yet there (both launchers free them after each step) unless they persist:
    gradient accumulation, DDP's buckets, DeepSpeed's partitions;
  - at the end of backward: every gradient, one layer's saved tensors (recomputed under
    checkpointing) and the gradients in flight inside it, on top of the checkpoints;
  - a trained embedding tied to the LM head: at the very end, every other gradient and the
    tied weight's two gradients and their sum (3 x V x h);
  offloaded activations leave no checkpoints on the device;
- overhead, the GPU-only terms, none of them measurable on the CPU: what a CUDA process
  holds outside torch's allocator (``CONTEXT_GIB``: context and loaded kernels, measured on
  an H100), NCCL's buffers when several processes train (``NCCL_GIB``, a flat allowance,
  unmeasured), and the caching allocator's reserve above its allocated peak
  (fragmentation: ``ALLOCATOR_SLACK`` x the largest tensor at the peak, fitted to the H100
  runs). Kernel workspaces (cuBLAS, flash attention) are not priced apart: they sit inside
  the H100 runs' allocated peaks the other terms were checked against. On a CPU job the
  overhead is still the GPU's (what ``explain`` shows for a CPU spec is a GPU's figure);
  the CPU measurements compare the estimate less its overhead.
Measured: bench/gpu_memory.py's runs on an H100 (bench/results/gpu_memory-h100-*.md) are
replayed by tests/compiler/test_memory_measured.py against the driver's figure (what an
out-of-memory is decided on: torch's reserved memory plus the context), within 5%;
bench/cpu_memory.py's runs on the CPU (bench/results/cpu_memory-*.md lists the cases: both
launchers, catalog shapes and a 262144-entry vocabulary, full and LoRA, checkpointed or not)
by tests/compiler/test_memory_cpu.py against the live tensors at the step's peak, within
10% in total and 15% per term; tests/compiler/test_memory_saved.py checks
``layer_saved_bytes`` against autograd's saved tensors in real layers on the CPU. On the
CPU the only term priced differently is TRL's fused head, folded by torch ops instead of
Triton (``_fused_head_bytes``). Not measured on a GPU: mixed precision, fp32, QLoRA,
FSDP / DeepSpeed / DDP, offloading, mixtures of experts (priced as one expert's MLP per
token), non-Llama layers (Gemma's extra norms, QK-norm, biases), other families' heads.
Sanity anchors (tests/compiler/test_memory.py): Llama-3.1-8B full AdamW under mixed
precision needs ~18 bytes/param (~135 GiB) and does not fit one 80 GB GPU but does with
FSDP over 8; QLoRA of an 8B model fits a 24 GB card (the QLoRA paper's single-GPU setup).
"""

from __future__ import annotations

from dataclasses import dataclass

from ftspec.spec.catalog.accelerators import ACCELERATORS
from ftspec.spec.ir import MemoryEstimate, ModelFacts
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.platforms import LAUNCHER_FACTS

GIB = float(1 << 30)
CONTEXT_GIB = 0.75
"""What a CUDA process holds outside torch's caching allocator (context, loaded kernels):
the driver's figure less torch's peak reserved was 0.745 GiB in every case measured on an
H100 (torch 2.11, CUDA 13; bench/results/gpu_memory-h100-2026-11-24.md)."""
NCCL_GIB = 0.25
"""NCCL's buffers when several processes train together: not measured, kept from the
former flat allowance."""
ALLOCATOR_SLACK = 0.6
"""torch's caching allocator reserves more than it hands out: cached blocks that do not fit
the next request. The peak reserved exceeded the peak allocated by 0.37 to 0.77 x the
largest single tensor alive at the peak (1.5 x for the chunked loss's 0.5 GiB chunks) in
the H100 measurements; charged at 0.6 x that tensor."""
TRL_TOKEN_CHUNK = 4096
"""``trl.kernels.chunked_logprob.TOKEN_CHUNK_SIZE``: tokens per fused-head tile."""
TRL_VOCAB_CHUNK = 32768
"""``trl.trainer.utils._CHUNKED_LOGPROB_CHUNK_SIZE``: vocabulary entries per tile."""
CPU_TILE_FP32 = 7.25
"""fp32 tile-sized tensors alive at once in TRL's torch fold of a tile (devices without
Triton: the CPU), counted from ``trl.kernels.chunked_logprob._backward_tile``: five locals
(upcast, scaled logits, log p, p, gradient), the target mask (0.25) and two temporaries."""

_DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
_STATE_COPIES = {
    "adamw": 2.0, "adam": 2.0, "lion": 1.0, "rmsprop": 1.0, "adafactor": 0.1,
    "paged_adamw_32bit": 2.0,
}
"""Optimizer state tensors per trainable parameter (adafactor: factored, ~rows + cols)."""
_STATE_BYTES_8BIT = {"adamw_8bit": 2.0, "paged_adamw_8bit": 2.0}
"""bitsandbytes' 8-bit Adam: two 1-byte moments per parameter, whatever the parameter's dtype."""
_STATE_FP32 = frozenset({"paged_adamw_32bit"})
"""bitsandbytes' 32-bit optimizers: fp32 state whatever the parameter's dtype."""
_ADAPTERS = ("lora", "qlora", "dora", "gptq_lora", "prompt_tuning", "ia3")
_LORA_KINDS = ("lora", "qlora", "dora", "gptq_lora")
_QUANTIZED = ("qlora", "gptq_lora")
CHUNKS = 8
"""torchtune's ``CEWithChunkedOutputLoss`` default ``num_output_chunks``."""


def lora_trainable_params(model: ModelFacts, modules: tuple[str, ...], rank: int) -> float:
    """Parameters of LoRA adapters: r x (in + out) for every adapted linear layer.

    Shapes come from the architecture numbers: query/output width heads x head size (not
    always the hidden size: Gemma, Qwen3), key/value width KV heads x head size, and MLP
    projections once per expert in mixtures of experts.
    """
    h = model.hidden_size
    q = model.num_heads * model.attn_head_dim
    kv = model.num_kv_heads * model.attn_head_dim
    inter = model.intermediate_size
    experts = max(1, model.num_experts)
    shapes = {
        "q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
        "gate_proj": (h, inter), "up_proj": (h, inter), "down_proj": (inter, h),
    }
    per_layer = 0
    for name, (i, o) in shapes.items():
        if name in modules and (model.gated_mlp or name != "gate_proj"):
            per_layer += rank * (i + o) * (experts if name.endswith(("gate_proj", "up_proj",
                                                                     "down_proj")) else 1)
    return float(per_layer * model.num_layers)


def expert_params(model: ModelFacts) -> float:
    """Parameters in the experts of a mixture-of-experts model (0 for dense models)."""
    if not model.num_experts:
        return 0.0
    mats = 3 if model.gated_mlp else 2
    return float(model.num_layers * model.num_experts * mats * model.hidden_size
                 * model.intermediate_size)


def estimate_memory(
    spec: FineTuneSpec,
    model: ModelFacts,
    lora_modules: tuple[str, ...],
    *,
    strategy: str,
    world_size: int,
    procs_per_node: int,
    micro_batch_size: int,
    accumulation: int = 1,
) -> MemoryEstimate:
    params = model.params_b * 1e9
    kind = spec.method.kind
    notes: list[str] = []
    compute_bytes = _DTYPE_BYTES[spec.model.dtype]
    mixed = spec.model.precision_mode == "mixed"
    load_bytes = 4.0 if mixed else compute_bytes

    if kind in ("lora", "qlora", "dora", "gptq_lora"):
        rank = spec.method.lora_settings.rank
        trainable = lora_trainable_params(model, lora_modules, rank)
        if kind == "dora":
            trainable += model.num_layers * model.hidden_size * len(lora_modules)
    elif kind == "prompt_tuning":
        pt = spec.method.prompt_tuning
        trainable = (pt.num_virtual_tokens if pt else 20) * model.hidden_size
    elif kind == "ia3":
        trainable = model.num_layers * (2 * model.hidden_size + model.intermediate_size)
    else:
        trainable = params

    weight_bytes = load_bytes
    if kind in _QUANTIZED:
        quant = spec.method.quantization
        bits = quant.bits if quant else 4
        weight_bytes = bits / 8 + (0.02 if quant is None or quant.double_quant else 0.06)
        notes.append(f"base weights in {bits}-bit")

    shard_params, shard_grads, shard_optim = 1, 1, 1
    fsdp = spec.distributed.fsdp
    deepspeed = spec.distributed.deepspeed
    optim_offloaded = False
    params_offloaded = False
    if strategy == "fsdp":
        sharding = fsdp.sharding if fsdp else "full_shard"
        group = procs_per_node if sharding.startswith("hybrid") else world_size
        if sharding in ("full_shard", "hybrid_shard"):
            shard_params = shard_grads = shard_optim = group
        elif sharding in ("shard_grad_op", "hybrid_shard_zero2"):
            shard_grads = shard_optim = group
        if fsdp is not None and fsdp.cpu_offload:
            optim_offloaded = params_offloaded = True
            notes.append("parameters and optimizer state offloaded to CPU")
    elif strategy == "deepspeed":
        stage = deepspeed.stage if deepspeed else 2
        shard_optim = world_size if stage >= 1 else 1
        shard_grads = world_size if stage >= 2 else 1
        shard_params = world_size if stage >= 3 else 1
        if deepspeed is not None and deepspeed.offload_optimizer != "none":
            optim_offloaded = True
            notes.append(f"optimizer state offloaded to {deepspeed.offload_optimizer}")
        if deepspeed is not None and stage == 3 and deepspeed.offload_params != "none":
            params_offloaded = True
            notes.append(f"parameters offloaded to {deepspeed.offload_params}")

    # Expert parallelism: each device holds num_experts / ep of every MoE layer's experts
    # (and their gradients and optimizer state when they train), unless sharding already
    # splits them finer.
    ep = spec.distributed.expert_parallel
    expert = expert_params(model) if ep > 1 else 0.0
    if expert:
        notes.append(f"experts split over {ep} devices (expert parallel)")

    def per_device(total: float, shard: int) -> float:
        return (total - expert) / shard + expert / max(shard, ep) if expert \
            else total / shard

    full = kind == "full"
    train_bytes = trainable_bytes(spec, load_bytes, strategy)
    weights = per_device(params, shard_params) * weight_bytes
    if full and mixed:  # autocast's cast cache: a dtype copy of each trainable weight
        weights += per_device(params, shard_params) * compute_bytes
        notes.append(f"fp32 master weights with a {spec.model.dtype} autocast copy")
    if kind in _ADAPTERS:
        weights += trainable * train_bytes
    gradients = (per_device(trainable, shard_grads) if full else trainable / shard_grads) \
        * train_bytes
    state = _optimizer_state_bytes(spec, train_bytes)
    optimizer = 0.0 if optim_offloaded else \
        (per_device(trainable, shard_optim) if full else trainable / shard_optim) * state
    if params_offloaded:
        # only the layers being gathered live on the device; gradients go to the CPU
        weights = params * weight_bytes * 2 / model.num_layers
        gradients = 0.0
    if mixed and kind in _ADAPTERS and kind not in _QUANTIZED and not params_offloaded:
        # autocast casts frozen weights at every call (its cache keeps trainable leaves
        # only) and each projection saves its 16-bit copy for the input's gradient: every
        # layer's under a plain backward, one layer's when checkpointed
        layer_params = _layer_linear_params(model)
        copies = 1 if spec.training.gradient_checkpointing else model.num_layers
        weights += layer_params * copies * compute_bytes / shard_params
        notes.append(f"autocast's {spec.model.dtype} copies of the frozen projections")

    # gradients that outlive a step's backward: accumulated over micro batches, or kept in
    # DDP's buckets / DeepSpeed's partitions; else both launchers free them after the step
    persist = accumulation > 1 or strategy in ("ddp", "deepspeed")
    # a trained input embedding shared with the LM head: its gradient is the last one made
    tied = model.vocab_size * model.hidden_size * train_bytes \
        if full and model.tied_embeddings and shard_grads == 1 and not params_offloaded else 0.0
    peak = _peak(spec, model, lora_modules, micro_batch=micro_batch_size,
                 adapter_bytes=train_bytes if kind in _ADAPTERS else 0.0,
                 gradients=gradients, gradients_persist=persist, tied_gradient=tied)
    if peak.phase == "loss" and not persist and gradients:
        notes.append("peak at the loss, before this step's gradients exist")
    overhead = CONTEXT_GIB * GIB + (NCCL_GIB * GIB if world_size > 1 else 0.0) \
        + ALLOCATOR_SLACK * peak.largest

    capacity = None
    if spec.resources.accelerator is not None and spec.resources.total_gpus > 0:
        capacity = ACCELERATORS[spec.resources.accelerator].memory_gib
    return MemoryEstimate(
        weights_gib=round(weights / GIB, 2),
        gradients_gib=round(peak.gradients / GIB, 2),
        optimizer_gib=round(optimizer / GIB, 2),
        activations_gib=round(peak.activations / GIB, 2),
        logits_gib=round(peak.logits / GIB, 2),
        overhead_gib=round(overhead / GIB, 2),
        trainable_params_b=round(trainable / 1e9, 6),
        capacity_gib=capacity,
        notes=tuple(notes),
    )


def _layer_linear_params(model: ModelFacts) -> float:
    """Parameters of one decoder layer, outside the embedding and the LM head."""
    embeddings = model.vocab_size * model.hidden_size * (1 if model.tied_embeddings else 2)
    return max(0.0, model.params_b * 1e9 - embeddings) / model.num_layers


def trainable_bytes(spec: FineTuneSpec, load_bytes: float, strategy: str) -> float:
    """Bytes per trainable parameter: what its tensor, gradient and state dtype is."""
    kind = spec.method.kind
    if kind not in _ADAPTERS:
        return load_bytes  # the loaded weights train
    if LAUNCHER_FACTS[spec.launcher].memory_profile == "torchtune":
        return _DTYPE_BYTES[spec.model.dtype]  # adapters built under set_default_dtype(dtype)
    if kind in _QUANTIZED:
        return 2.0  # SFTTrainer casts adapters over a quantized base to bf16
    ds = spec.distributed.deepspeed
    zero3 = strategy == "deepspeed" and ds is not None and ds.stage == 3
    return load_bytes if zero3 else 4.0  # PEFT autocast_adapter_dtype (not under ZeRO-3)


def _optimizer_state_bytes(spec: FineTuneSpec, train_bytes: float) -> float:
    """Bytes of optimizer state per trainable parameter (torch optimizers: the parameter's
    dtype; bitsandbytes' 8-bit and 32-bit optimizers: their own)."""
    o = spec.training.optimizer
    if o.name in _STATE_BYTES_8BIT:
        return _STATE_BYTES_8BIT[o.name]
    copies = _STATE_COPIES.get(o.name, 0.0)
    if o.name in ("sgd",):
        copies = 1.0 if o.momentum > 0 else 0.0
    return copies * (4.0 if o.name in _STATE_FP32 else train_bytes)


def logits_bytes_per_element(spec: FineTuneSpec) -> float:
    """Bytes held per logit (b x s x vocab) at the loss's peak, on torchtune (the accelerate
    launcher never builds the logits: see ``_fused_head_bytes``).

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


def _fused_head_bytes(spec: FineTuneSpec, model: ModelFacts, tokens: float,
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
    compute = _DTYPE_BYTES[spec.model.dtype]
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
      own copy; under autocast each ``lora_A`` saves its own c copy; where adapter and input
      share a dtype (torchtune, QLoRA) the input is the norm output / down_proj's input,
      saved once.
    """
    h = model.hidden_size
    heads = model.num_heads
    q = heads * model.attn_head_dim
    kv = model.num_kv_heads * model.attn_head_dim
    inter = model.intermediate_size
    c = _DTYPE_BYTES[spec.model.dtype]
    mixed = spec.model.precision_mode == "mixed"
    tune = LAUNCHER_FACTS[spec.launcher].memory_profile == "torchtune"
    full = spec.method.kind == "full"
    saved = 2 * 4.0 * h
    if full:
        saved += 2 * (4.0 if tune else (4.0 if mixed else c)) * h
        saved += (5 if mixed else 2) * c * h + c * inter
    saved += c * 4 * q if tune else c * (2 * q + 2 * kv)
    saved += 4.0 * heads
    saved += (3 if model.gated_mlp else 1) * c * inter
    if spec.method.kind in _LORA_KINDS:
        rank = spec.method.lora_settings.rank
        widths = {"q_proj": h, "k_proj": h, "v_proj": h, "o_proj": q,
                  "gate_proj": h, "up_proj": h, "down_proj": inter}
        adapted = [m for m in lora_modules if m in widths
                   and (model.gated_mlp or m != "gate_proj")]
        if mixed or adapter_bytes != c:  # one cast copy per adapted projection
            each = c if mixed else adapter_bytes
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


def _layer_backward_bytes(spec: FineTuneSpec, model: ModelFacts, lora_modules: tuple[str, ...],
                          adapter_bytes: float) -> float:
    """Gradients in flight inside one layer's backward, per token: at down_proj the
    gradients of its input from the base weight and from the adapter, and their sum, all MLP
    wide: 2 x cI + I x the adapter path's bytes (fp32 for PEFT's upcast adapters)."""
    c = _DTYPE_BYTES[spec.model.dtype]
    adapted = spec.method.kind in _LORA_KINDS and "down_proj" in lora_modules
    via = adapter_bytes if adapted else c
    return model.intermediate_size * (2 * c + via)


@dataclass(frozen=True)
class _Peak:
    activations: float
    logits: float
    gradients: float
    largest: float
    """The largest single tensor alive then (what the allocator's slack is priced on)."""
    phase: str

    @property
    def total(self) -> float:
        return self.activations + self.logits + self.gradients


def _peak(spec: FineTuneSpec, model: ModelFacts, lora_modules: tuple[str, ...], *,
          micro_batch: int, adapter_bytes: float, gradients: float,
          gradients_persist: bool, tied_gradient: float = 0.0) -> _Peak:
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
    s = spec.data.max_seq_len or model.context_len  # null: as long as the model allows
    tokens = float(micro_batch * s)
    h = model.hidden_size
    c = _DTYPE_BYTES[spec.model.dtype]
    residual = 4.0 if spec.model.precision_mode == "mixed" else c
    t = spec.training
    layer = layer_saved_bytes(spec, model, lora_modules, adapter_bytes) * tokens
    backward = _layer_backward_bytes(spec, model, lora_modules, adapter_bytes) * tokens
    checkpoints = residual * h * tokens * model.num_layers
    if t.activation_offloading:
        stored = 0.0  # the checkpoints sit in CPU memory
    elif t.gradient_checkpointing:
        stored = checkpoints
    else:
        stored = layer * model.num_layers
    # around the layers: the final norm's fp32 input and the head's input
    stored += (4.0 + c) * h * tokens
    full = spec.method.kind == "full"
    if LAUNCHER_FACTS[spec.launcher].memory_profile == "torchtune":
        logits = tokens * model.vocab_size * logits_bytes_per_element(spec)
        chunked = spec.training.loss == "chunked_cross_entropy"
        largest = tokens * model.vocab_size * 4.0 / (CHUNKS if chunked else 1)
    else:
        logits, largest = _fused_head_bytes(spec, model, tokens, head_trained=full)
    at_loss = _Peak(stored, logits, gradients if gradients_persist else 0.0, largest, "loss")
    end_stored = (checkpoints if t.gradient_checkpointing and not t.activation_offloading
                  else 0.0) + layer + backward
    widest = max(c, adapter_bytes if spec.method.kind in _LORA_KINDS else c)
    at_end = _Peak(end_stored, 0.0, gradients, model.intermediate_size * tokens * widest,
                   "backward")
    moments = [at_loss, at_end]
    if tied_gradient:
        moments.append(_Peak(0.0, 3 * tied_gradient, gradients - tied_gradient,
                             tied_gradient, "embedding"))
    return max(moments, key=lambda m: m.total)


@dataclass(frozen=True)
class AcceleratorFit:
    """Whether the same topology's per-device estimate fits one accelerator model."""

    key: str
    display: str
    capacity_gib: float
    need_gib: float
    fits: bool
    bf16: bool
    """False when the spec trains in bf16 and this accelerator has no bf16 support."""

    @property
    def headroom_gib(self) -> float:
        return round(self.capacity_gib - self.need_gib, 2)


def fit_by_accelerator(memory: MemoryEstimate, dtype: str) -> list[AcceleratorFit]:
    """Every accelerator ftspec knows, for the same topology (smallest first)."""
    need = round(memory.total_gib, 2)
    return [
        AcceleratorFit(a.key, a.display, a.memory_gib, need, need <= a.memory_gib,
                       a.bf16 or dtype != "bf16")
        for a in sorted(ACCELERATORS.values(), key=lambda a: (a.memory_gib, a.key))
    ]
