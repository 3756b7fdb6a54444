"""Peak GPU memory per device: weights, gradients, optimizer state, activations.

A first-order model in the spirit of the usual back-of-envelope estimates, priced by what
each launcher really allocates under ``model.precision``:
- weights: parameters x the bytes they load in: ``dtype`` under pure precision (2 for
  bf16/fp16, 4 for fp32), 4 under mixed (TRL loads fp32 master weights; autocast also caches
  a ``dtype`` copy of every trainable weight for the forward: + 2 per trainable parameter);
  bits/8 plus quantization constants for 4/8-bit bases (~0.52 bytes for NF4 with double
  quantization, Dettmers et al. 2023, "QLoRA", sec. 3). Divided by the shard count when FSDP
  full_shard or ZeRO-3 shard them;
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
- activations: per layer ~34 x s x b x h bytes in 16-bit with fused attention
  (Korthikanti et al. 2022, "Reducing Activation Recomputation", eq. 1 without the
  5as/h attention-score term); with checkpointing only each layer's input (2 x s x b x h)
  plus one live layer; with offloading one live layer; plus the logits (see
  ``logits_bytes_per_element``);
- overhead: CUDA context, NCCL buffers and allocator slack, 1 GiB.
Sanity anchors (tests/compiler/test_memory.py): Llama-3.1-8B full AdamW under mixed
precision needs ~18 bytes/param (~135 GiB) and does not fit one 80 GB GPU but does with
FSDP over 8; QLoRA of an 8B model fits a 24 GB card (the QLoRA paper's single-GPU setup).
"""

from __future__ import annotations

from dataclasses import dataclass

from ftspec.spec.catalog.accelerators import ACCELERATORS
from ftspec.spec.ir import MemoryEstimate, ModelFacts
from ftspec.spec.model import FineTuneSpec

GIB = float(1 << 30)
CONTEXT_GIB = 1.0
"""CUDA context, NCCL buffers and allocator fragmentation, roughly."""

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

    activations = _activation_bytes(spec, model, micro_batch_size)
    overhead = CONTEXT_GIB * GIB

    capacity = None
    if spec.resources.accelerator is not None and spec.resources.total_gpus > 0:
        capacity = ACCELERATORS[spec.resources.accelerator].memory_gib
    return MemoryEstimate(
        weights_gib=round(weights / GIB, 2),
        gradients_gib=round(gradients / GIB, 2),
        optimizer_gib=round(optimizer / GIB, 2),
        activations_gib=round(activations / GIB, 2),
        overhead_gib=round(overhead / GIB, 2),
        trainable_params_b=round(trainable / 1e9, 6),
        capacity_gib=capacity,
        notes=tuple(notes),
    )


def trainable_bytes(spec: FineTuneSpec, load_bytes: float, strategy: str) -> float:
    """Bytes per trainable parameter: what its tensor, gradient and state dtype is."""
    kind = spec.method.kind
    if kind not in _ADAPTERS:
        return load_bytes  # the loaded weights train
    if spec.launcher == "torchtune":
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
    """Bytes held per logit (b x s x vocab) at the loss's peak.

    transformers' causal-LM loss keeps the model's logits (``dtype``: autocast's lm_head
    output is 16-bit too), upcasts them (``logits.float()``) and takes the fp32 log-softmax:
    2 + 4 + 4 in 16-bit, 4 + 4 in fp32 (``float()`` of an fp32 tensor is the tensor).
    torchtune's decoder upcasts its whole output (the 16-bit one is freed at once) and its
    cross-entropy takes the log-softmax: 4 + 4. Its ``CEWithChunkedOutputLoss`` keeps the
    16-bit chunks and upcasts one chunk of ``CHUNKS`` at a time, while every chunk's fp32
    log-softmax stays saved for backward: 2 + 4 + 4 / 8 in 16-bit, 4 + 4 in fp32.
    """
    low = spec.model.dtype != "fp32"
    if spec.launcher == "torchtune":
        if spec.training.loss == "chunked_cross_entropy" and low:
            return 2.0 + 4.0 + 4.0 / CHUNKS
        return 8.0
    return 2.0 + 4.0 + 4.0 if low else 8.0


def _activation_bytes(spec: FineTuneSpec, model: ModelFacts, micro_batch: int) -> float:
    s = spec.data.max_seq_len or model.context_len  # null: as long as the model allows
    b = micro_batch
    h = model.hidden_size
    layers = model.num_layers
    scale = _DTYPE_BYTES[spec.model.dtype] / 2.0
    per_layer_full = 34.0 * s * b * h * scale
    t = spec.training
    if t.activation_offloading:
        stored = per_layer_full  # one live layer; the rest sits in CPU memory
    elif t.gradient_checkpointing:
        stored = 2.0 * s * b * h * scale * layers + per_layer_full
    else:
        stored = per_layer_full * layers
    return stored + b * s * model.vocab_size * logits_bytes_per_element(spec)


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
