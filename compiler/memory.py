"""Peak GPU memory per device: weights, gradients, optimizer state, activations.

A first-order model, in the spirit of the usual back-of-envelope estimates:
- weights: parameters x bytes per parameter (2 for bf16/fp16, 4 for fp32, ~0.52 for NF4
  with double quantization), divided by the shard count when FSDP/ZeRO-3 shard them;
- gradients: trainable parameters x parameter bytes, sharded by FSDP or ZeRO >= 2;
- optimizer: trainable parameters x state bytes (AdamW: two fp32 moments + an fp32 master
  copy when training in mixed precision), sharded by FSDP or ZeRO >= 1, zero on the device
  when offloaded;
- activations: per layer ~34 x s x b x h bytes with fused attention (Korthikanti et al.,
  2022), only the layer inputs (2 x s x b x h) plus one live layer with checkpointing,
  plus the fp32 logits (b x s x vocab x 4, an eighth with chunked cross-entropy);
- overhead: CUDA context and allocator slack.
"""

from __future__ import annotations

from ftspec.spec.catalog.accelerators import ACCELERATORS
from ftspec.spec.ir import MemoryEstimate, ModelFacts
from ftspec.spec.model import FineTuneSpec

GIB = float(1 << 30)
CONTEXT_GIB = 1.0
"""CUDA context, NCCL buffers and allocator fragmentation, roughly."""

_DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
_OPTIMIZER_STATE_BYTES = {
    "adamw": 8.0, "adam": 8.0, "lion": 4.0, "sgd": 4.0, "rmsprop": 4.0, "adafactor": 4.0,
    "adamw_8bit": 2.0, "paged_adamw_8bit": 2.0, "paged_adamw_32bit": 8.0,
}


def lora_trainable_params(model: ModelFacts, modules: tuple[str, ...], rank: int) -> float:
    """Parameters of LoRA adapters: r x (in + out) for every adapted linear layer."""
    h = model.hidden_size
    head_dim = h // model.num_heads
    kv = model.num_kv_heads * head_dim
    shapes = {
        "q_proj": (h, h), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (h, h),
        "gate_proj": (h, model.intermediate_size), "up_proj": (h, model.intermediate_size),
        "down_proj": (model.intermediate_size, h),
    }
    per_layer = sum(rank * (i + o) for name, (i, o) in shapes.items() if name in modules)
    return per_layer * model.num_layers


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
    param_bytes = _DTYPE_BYTES[spec.model.dtype]

    if kind in ("lora", "qlora", "dora", "gptq_lora"):
        rank = spec.method.lora.rank if spec.method.lora else 8
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

    weight_bytes = param_bytes
    if kind in ("qlora", "gptq_lora"):
        quant = spec.method.quantization
        bits = quant.bits if quant else 4
        weight_bytes = bits / 8 + (0.02 if quant is None or quant.double_quant else 0.06)
        notes.append(f"base weights in {bits}-bit")

    shard_params, shard_grads, shard_optim = 1, 1, 1
    fsdp = spec.distributed.fsdp
    deepspeed = spec.distributed.deepspeed
    optim_offloaded = False
    if strategy == "fsdp":
        sharding = fsdp.sharding if fsdp else "full_shard"
        group = procs_per_node if sharding.startswith("hybrid") else world_size
        if sharding in ("full_shard", "hybrid_shard"):
            shard_params = shard_grads = shard_optim = group
        elif sharding in ("shard_grad_op", "hybrid_shard_zero2"):
            shard_grads = shard_optim = group
        if fsdp is not None and fsdp.cpu_offload:
            optim_offloaded = True
            notes.append("parameters and optimizer state offloaded to CPU")
    elif strategy == "deepspeed":
        stage = deepspeed.stage if deepspeed else 2
        shard_optim = world_size if stage >= 1 else 1
        shard_grads = world_size if stage >= 2 else 1
        shard_params = world_size if stage >= 3 else 1
        if deepspeed is not None and deepspeed.offload_optimizer != "none":
            optim_offloaded = True
            notes.append(f"optimizer state offloaded to {deepspeed.offload_optimizer}")

    weights = params * weight_bytes / shard_params
    if kind in ("lora", "qlora", "dora", "gptq_lora", "prompt_tuning", "ia3"):
        weights += trainable * 4  # adapters are usually kept in fp32
    gradients = trainable * param_bytes / shard_grads
    state = _OPTIMIZER_STATE_BYTES[spec.training.optimizer.name]
    if spec.launcher == "accelerate" and spec.model.dtype != "fp32" and kind == "full":
        state += 4.0  # fp32 master weights under mixed precision
    optimizer = 0.0 if optim_offloaded else trainable * state / shard_optim

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


def _activation_bytes(spec: FineTuneSpec, model: ModelFacts, micro_batch: int) -> float:
    s = spec.data.max_seq_len
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
    logits = b * s * model.vocab_size * 4.0
    if t.loss == "chunked_cross_entropy":
        logits /= 8
    return stored + logits
