"""Peak GPU memory per device: weights, gradients, optimizer state, activations, logits.

``estimate_memory`` adds named terms, each a small function a test checks alone: the
training state here (``trainable_params``, ``base_weights``, ``autocast_copy``,
``adapter_weights``, ``frozen_casts``, ``gradient_bytes``, ``optimizer_bytes``,
``tied_gradient_bytes``, ``overhead_bytes``, over a ``Placement``: shards, offloads and
expert parallelism, in ``compiler/memory_placement.py``), the step's peak in
``compiler/memory_peak.py`` (activations, logits) and the Mamba-2 / vision terms in
``compiler/memory_arch.py``.

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
  + 2 bytes per layer parameter, every layer (one when checkpointed). ``precision:
  autocast`` stores what pure stores (weights, gradients and state in ``dtype``; adapters
  as under pure): autocast has nothing to cast or cache over weights already in ``dtype``;
  its only change to the step is at the adapters' inputs (``memory_peak.layer_saved_bytes``);
- trainable parameters keep their own dtype: a full fine-tune trains the loaded weights;
  adapters are in ``dtype`` on torchtune (its recipes check it), in fp32 on TRL (PEFT's
  ``autocast_adapter_dtype``; ZeRO-3 keeps the base dtype) and in bf16 on TRL over a
  quantized base (SFTTrainer casts them, as the QLoRA paper does);
- with ``method.unfrozen_parameters`` the trainable parameters are those its patterns match
  (``memory_frozen.py``, the runtime's rule); the weights stay whole;
- gradients: trainable parameters x their bytes, sharded by FSDP or ZeRO >= 2;
- optimizer: trainable parameters x state tensors x their bytes: torch optimizers keep
  state like the parameter (pure bf16 AdamW: 2 x 2 bytes; mixed: 2 x 4), 8-bit optimizers
  1 byte per moment, bitsandbytes' 32-bit ones 4. So a full fine-tune costs 2 + 2 + 4 = 8
  bytes per parameter in pure bf16, 4 + 2 + 4 + 8 = 18 in mixed (ZeRO's 16, Rajbhandari et
  al. 2020, sec. 3.1, keeps 16-bit gradients; autocast does not). Sharded by FSDP or
  ZeRO >= 1 (the ZeRO paper's stages 1/2/3 = optimizer / + gradients / + parameters); zero on
  the device when offloaded (FSDP cpu_offload offloads parameters too: only the layers being
  gathered stay);
- the step's peak (``step_peak``): the larger of two moments, priced from what the installed
  libraries keep alive (transformers 5.23, PEFT 0.18, TRL 1.16, torchtune 0.6.1):
  - at the loss: every layer's saved tensors (``layer_saved_bytes``: RMSNorm fp32 upcasts,
    projection inputs, SDPA's q / k / v / output / logsumexp, the gated MLP's gate, SiLU and
    up outputs, PEFT's fp32 input copies), or under checkpointing each layer's input, plus
    the loss head (``logits``): torchtune's log-softmax backward, 12 bytes per logit, or
    its chunked loss' forward (``logits_bytes_per_element``); TRL's fused LM head, which
    never builds the logits (``fused_head_bytes``). A full fine-tune's gradients do not
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
Triton (``fused_head_bytes``). Not measured on a GPU: mixed precision, fp32, QLoRA,
FSDP / DeepSpeed / DDP, offloading, mixtures of experts (priced as one expert's MLP per
token), non-Llama layers (Gemma's extra norms, QK-norm, biases), other families' heads.
Sanity anchors (tests/compiler/test_memory.py): Llama-3.1-8B full AdamW under mixed
precision needs ~18 bytes/param (~135 GiB) and does not fit one 80 GB GPU but does with
FSDP over 8; QLoRA of an 8B model fits a 24 GB card (the QLoRA paper's single-GPU setup).
"""

from __future__ import annotations

from dataclasses import dataclass

from ftspec.compiler.memory_frozen import (
    Unfrozen,
    unfrozen_base,
    unfrozen_base_bytes,
    unfrozen_params,
)
from ftspec.compiler.memory_lora import lora_trainable_params
from ftspec.compiler.memory_peak import Peak, step_peak
from ftspec.compiler.memory_placement import Placement, placement
from ftspec.compiler.memory_units import DTYPE_BYTES
from ftspec.spec.catalog.accelerators import ACCELERATORS
from ftspec.spec.ir import MemoryEstimate, ModelFacts
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.method import ALL_LINEAR, LORA_FAMILY, PEFT_ADAPTERS, QUANTIZED_LORA
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

_STATE_COPIES = {
    "adamw": 2.0, "adam": 2.0, "lion": 1.0, "rmsprop": 1.0, "adafactor": 0.1,
    "paged_adamw_32bit": 2.0,
}
"""Optimizer state tensors per trainable parameter (adafactor: factored, ~rows + cols)."""
_STATE_BYTES_8BIT = {"adamw_8bit": 2.0, "paged_adamw_8bit": 2.0}
"""bitsandbytes' 8-bit Adam: two 1-byte moments per parameter, whatever the parameter's dtype."""
_STATE_FP32 = frozenset({"paged_adamw_32bit"})
"""bitsandbytes' 32-bit optimizers: fp32 state whatever the parameter's dtype."""


def trainable_params(spec: FineTuneSpec, model: ModelFacts,
                     lora_modules: tuple[str, ...]) -> float:
    """Parameters that train: every one (full); LoRA's r x (in + out) per adapted
    projection (+ DoRA's magnitude vector, one per output feature of each adapted projection); prompt tuning's
    virtual tokens x h (20 by default, PEFT's example); IA3's three scaling vectors per layer
    (k and v: h each, the MLP's: I). With ``method.unfrozen_parameters``, what the patterns
    leave (``memory_frozen``): a full fine-tune's matched parameters, LoRA's matched adapters
    (the matched base parameters: ``memory_frozen.unfrozen_base_bytes``)."""
    kind = spec.method.kind
    frozen = unfrozen_params(spec, model, lora_modules)
    if frozen is not None:
        return frozen.base if kind == "full" else frozen.adapters
    if kind in LORA_FAMILY:
        lora = spec.method.lora_settings
        peft_all_linear = (lora.target_modules == [ALL_LINEAR]
                           and LAUNCHER_FACTS[spec.launcher].memory_profile != "torchtune")
        return lora_trainable_params(model, lora_modules, lora.rank, peft_all_linear,
                                     dora=kind == "dora")
    if kind == "prompt_tuning":
        pt = spec.method.prompt_tuning
        return float((pt.num_virtual_tokens if pt else 20) * model.hidden_size)
    if kind == "ia3":
        return float(model.num_layers * (2 * model.hidden_size + model.intermediate_size))
    return model.params_b * 1e9


def load_bytes(spec: FineTuneSpec) -> float:
    """Bytes a loaded parameter takes: ``dtype`` under pure precision, fp32 under mixed."""
    return 4.0 if spec.model.precision_mode == "mixed" else DTYPE_BYTES[spec.model.dtype]


def _quant_bits(spec: FineTuneSpec) -> int:
    quant = spec.method.quantization
    return quant.bits if quant else 4


def base_weight_bytes(spec: FineTuneSpec) -> float:
    """Bytes per base parameter: ``load_bytes``, or over a quantized base bits / 8 plus its
    quantization constants (0.02 with double quantization, 0.06 without: QLoRA sec. 3)."""
    if spec.method.kind not in QUANTIZED_LORA:
        return load_bytes(spec)
    quant = spec.method.quantization
    return _quant_bits(spec) / 8 + (0.02 if quant is None or quant.double_quant else 0.06)


def base_weights(spec: FineTuneSpec, model: ModelFacts, place: Placement) -> float:
    """The model's parameters x ``base_weight_bytes`` on one device; offloaded, only the
    layers being gathered (two layers' worth)."""
    params = model.params_b * 1e9
    if place.params_offloaded:
        return params * base_weight_bytes(spec) * 2 / model.num_layers
    return place.per_device(params, place.params) * base_weight_bytes(spec)


def _autocast_keeps_copy(spec: FineTuneSpec) -> bool:
    return spec.method.kind == "full" and spec.model.precision_mode == "mixed"


def autocast_copy(spec: FineTuneSpec, model: ModelFacts, place: Placement) -> float:
    """A full fine-tune under mixed precision: autocast's cast cache keeps a ``dtype`` copy
    of every trainable (fp32 master) weight for the forward (those the patterns of
    ``unfrozen_parameters`` match, when they are given)."""
    if not _autocast_keeps_copy(spec) or place.params_offloaded:
        return 0.0
    frozen = unfrozen_params(spec, model)
    params = frozen.base if frozen is not None else model.params_b * 1e9
    return place.per_device(params, place.params) * DTYPE_BYTES[spec.model.dtype]


def adapter_weights(spec: FineTuneSpec, trainable: float, train_bytes: float,
                    place: Placement) -> float:
    """Adapter methods: the adapters' own tensors, trainable x ``trainable_bytes``."""
    if spec.method.kind not in PEFT_ADAPTERS or place.params_offloaded:
        return 0.0
    return trainable * train_bytes


def _casts_frozen(spec: FineTuneSpec, model: ModelFacts, place: Placement) -> bool:
    kind = spec.method.kind
    frozen = unfrozen_params(spec, model) if kind == "full" else None
    partial = frozen is not None and frozen.trained_tensors < frozen.total_tensors
    return (spec.model.precision_mode == "mixed" and (kind in PEFT_ADAPTERS or partial)
            and kind not in QUANTIZED_LORA and not place.params_offloaded)


def frozen_casts(spec: FineTuneSpec, model: ModelFacts, place: Placement) -> float:
    """Adapters (or a full fine-tune freezing by pattern) under mixed precision: autocast
    casts the frozen fp32 projections at every call (its cache keeps trainable leaves only)
    and each projection saves its 16-bit copy for the input's gradient: one layer's
    parameters x c per layer (every layer under a plain backward, one layer when
    checkpointed), sharded like the parameters."""
    if not _casts_frozen(spec, model, place):
        return 0.0
    copies = 1 if spec.training.gradient_checkpointing else model.num_layers
    return _layer_linear_params(model) * copies * DTYPE_BYTES[spec.model.dtype] / place.params


def gradient_bytes(spec: FineTuneSpec, trainable: float, train_bytes: float,
                   place: Placement) -> float:
    """Trainable parameters x their bytes, sharded by FSDP or ZeRO >= 2 (a full
    fine-tune's experts split by expert parallelism); none on the device when the
    parameters are offloaded (their gradients go to the CPU)."""
    if place.params_offloaded:
        return 0.0
    full = spec.method.kind == "full"
    return (place.per_device(trainable, place.grads) if full
            else trainable / place.grads) * train_bytes


def optimizer_bytes(spec: FineTuneSpec, trainable: float, train_bytes: float,
                    place: Placement) -> float:
    """Trainable parameters x the optimizer's state bytes (``_optimizer_state_bytes``),
    sharded by FSDP or ZeRO >= 1; none on the device when offloaded."""
    if place.optim_offloaded:
        return 0.0
    full = spec.method.kind == "full"
    state = _optimizer_state_bytes(spec, train_bytes)
    return (place.per_device(trainable, place.optim) if full
            else trainable / place.optim) * state


def gradients_persist(strategy: str, accumulation: int) -> bool:
    """Gradients that outlive a step's backward: accumulated over micro batches, or kept in
    DDP's buckets / DeepSpeed's partitions; else both launchers free them after the step."""
    return accumulation > 1 or strategy in ("ddp", "deepspeed")


def tied_gradient_bytes(spec: FineTuneSpec, model: ModelFacts, train_bytes: float,
                        place: Placement) -> float:
    """A trained input embedding shared with the LM head (full fine-tune, unsharded
    gradients): its gradient, V x h x the trainable bytes, is the last one made."""
    if (spec.method.kind != "full" or not model.tied_embeddings or place.grads != 1
            or place.params_offloaded):
        return 0.0
    frozen = unfrozen_params(spec, model)
    if frozen is not None and not frozen.embedding:
        return 0.0
    return model.vocab_size * model.hidden_size * train_bytes


def overhead_bytes(world_size: int, largest: float) -> float:
    """The GPU-only terms: the CUDA context (``CONTEXT_GIB``), NCCL's buffers when several
    processes train (``NCCL_GIB``) and the caching allocator's slack (``ALLOCATOR_SLACK`` x
    the largest tensor at the peak)."""
    return CONTEXT_GIB * GIB + (NCCL_GIB * GIB if world_size > 1 else 0.0) \
        + ALLOCATOR_SLACK * largest


def capacity_gib(spec: FineTuneSpec) -> float | None:
    """The accelerator's memory, when the spec names one and trains on GPUs."""
    if spec.resources.accelerator is None or spec.resources.total_gpus <= 0:
        return None
    return ACCELERATORS[spec.resources.accelerator].memory_gib


def _notes(spec: FineTuneSpec, model: ModelFacts, place: Placement, peak: Peak,
           persist: bool, gradients: float, frozen: Unfrozen | None) -> tuple[str, ...]:
    notes: list[str] = []
    if frozen is not None:
        notes.append(f"unfrozen_parameters: {frozen.trained_tensors} of "
                     f"{frozen.total_tensors} parameter tensors train")
    elif spec.method.unfrozen_parameters:
        notes.append("unfrozen_parameters not counted for this architecture or method: "
                     "priced as if the method trained all it trains without them")
    if spec.method.kind in QUANTIZED_LORA:
        notes.append(f"base weights in {_quant_bits(spec)}-bit")
    notes += place.notes
    if _autocast_keeps_copy(spec):
        notes.append(f"fp32 master weights with a {spec.model.dtype} autocast copy")
    if _casts_frozen(spec, model, place):
        notes.append(f"autocast's {spec.model.dtype} copies of the frozen projections")
    if peak.phase == "loss" and not persist and gradients:
        notes.append("peak at the loss, before this step's gradients exist")
    return tuple(notes)


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
    """Peak memory per device: the terms above, added."""
    trainable = trainable_params(spec, model, lora_modules)
    frozen = unfrozen_params(spec, model, lora_modules)
    train_bytes = trainable_bytes(spec, load_bytes(spec), strategy)
    place = placement(spec, model, strategy=strategy, world_size=world_size,
                      procs_per_node=procs_per_node)
    weights = (base_weights(spec, model, place) + autocast_copy(spec, model, place)
               + adapter_weights(spec, trainable, train_bytes, place)
               + frozen_casts(spec, model, place))
    base_grads, base_optim = unfrozen_base_bytes(
        spec, frozen, load_bytes(spec),
        _optimizer_state_bytes(spec, load_bytes(spec)), place)
    gradients = gradient_bytes(spec, trainable, train_bytes, place) + base_grads
    optimizer = optimizer_bytes(spec, trainable, train_bytes, place) + base_optim
    persist = gradients_persist(strategy, accumulation)
    peak = step_peak(spec, model, lora_modules, micro_batch=micro_batch_size,
                     adapter_bytes=train_bytes if spec.method.kind in PEFT_ADAPTERS else 0.0,
                     gradients=gradients, gradients_persist=persist,
                     tied_gradient=tied_gradient_bytes(spec, model, train_bytes, place))
    return MemoryEstimate(
        weights_gib=round(weights / GIB, 2),
        gradients_gib=round(peak.gradients / GIB, 2),
        optimizer_gib=round(optimizer / GIB, 2),
        activations_gib=round(peak.activations / GIB, 2),
        logits_gib=round(peak.logits / GIB, 2),
        overhead_gib=round(overhead_bytes(world_size, peak.largest) / GIB, 2),
        trainable_params_b=round((trainable + unfrozen_base(spec, frozen)) / 1e9, 6),
        capacity_gib=capacity_gib(spec),
        notes=_notes(spec, model, place, peak, persist, gradients, frozen),
    )


def _layer_linear_params(model: ModelFacts) -> float:
    """Parameters of one decoder layer, outside the embedding and the LM head."""
    embeddings = model.vocab_size * model.hidden_size * (1 if model.tied_embeddings else 2)
    return max(0.0, model.params_b * 1e9 - embeddings) / model.num_layers


def trainable_bytes(spec: FineTuneSpec, load_bytes: float, strategy: str) -> float:
    """Bytes per trainable parameter: what its tensor, gradient and state dtype is."""
    kind = spec.method.kind
    if kind not in PEFT_ADAPTERS:
        return load_bytes  # the loaded weights train
    if LAUNCHER_FACTS[spec.launcher].memory_profile == "torchtune":
        return DTYPE_BYTES[spec.model.dtype]  # adapters built under set_default_dtype(dtype)
    if kind == "qlora":
        # SFTTrainer.__init__ casts adapters to bf16 only when the model is
        # is_loaded_in_4bit / is_loaded_in_8bit, which only bitsandbytes' quantizers set
        # (TRL 1.16); adapters over a GPTQ base stay as PEFT makes them (below).
        return 2.0
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
