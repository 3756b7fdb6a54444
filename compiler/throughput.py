"""Predicted training throughput of a compiled job: tokens per second per device.

A roofline over one optimizer step on one device, then a fitted efficiency:

    step_s = (max(flops / peak_flops, bytes / memory_bandwidth) + adapter_bytes / memory_bandwidth)
             / efficiency + comm_s

- ``flops``: the step's tokens on this device x ``flops_per_token`` (below);
- ``bytes``: the weights read once per pass over each micro-batch (forward, backward, and
  the recompute under checkpointing) and the optimizer's read and write of the trainable
  parameters, their gradients and state (``step_bytes``); activations' traffic is left out
  but for LoRA's adapter path (``adapter_bytes``): small elementwise kernels and casts that
  the recorded H100 runs show cost as much time as the 2N of weight gradients LoRA saves
  (TRL's LoRA run was slower than its full fine-tune);
- ``comm_s``: the bytes the sharding strategy sends per step (``comm_bytes``) over one GPU's
  link to the others (NVLink or PCIe within a node, ``INTER_NODE_GBPS`` across nodes), not
  overlapped with compute (an upper bound: DDP and FSDP overlap part of it);
- ``efficiency``: the share of the roofline a launcher's training loop reaches, fitted on
  measured runs per launcher family (``compiler/throughput_fit.py``; the fit and its
  leave-one-out error are reproduced by ``bench/throughput.py``).

FLOPs per token (``flops_per_token``), with N the parameters that multiply (the input
embedding is a lookup, not a matmul; a tied head multiplies by it), T the base parameters
that train, A the adapters' parameters, L the attention layers, d = heads x head_dim and
s the sequence length:

    forward   = 2N + 2A + 4·L·d·s
    backward  = 2N (gradients of the activations, through frozen layers too)
                + 2T (gradients of the trained weights) + 4A + 8·L·d·s
    recompute = forward, when activations are checkpointed

A full fine-tune (T = N, A = 0) gives 6N + 12·L·d·s per token: the training FLOPs of
Kaplan et al. 2020 ("Scaling Laws for Neural Language Models", sec. 2.1: 2N forward, twice
that backward) with the attention term of Chowdhery et al. 2022 ("PaLM", appendix B:
6N + 12·L·H·Q·T, counting the full score matrix even under a causal mask). LoRA keeps the
2N forward and the 2N of activation gradients but drops the 2N of weight gradients
(Hu et al. 2021 make the same point for its speed-up): about 4N. Mixtures of experts are
priced as dense (every expert, an upper bound: the IR does not carry the experts per
token), and Mamba layers as their projections (no scan term).

Written here rather than taken from a library: the FLOP counters (torch's
``FlopCounterMode``, fvcore) need the model built and a step traced, which the compiler
does not do; none prices a launcher, a sharding strategy or an accelerator from a spec.
"""

from __future__ import annotations

from dataclasses import dataclass

from ftspec.compiler.memory import load_bytes, trainable_bytes, trainable_params
from ftspec.compiler.memory_frozen import unfrozen_base, unfrozen_params
from ftspec.compiler.memory_lora import attention_layers
from ftspec.spec.catalog.accelerator_peaks import peak_of
from ftspec.spec.ir import Job
from ftspec.spec.model.method import LORA_FAMILY, PEFT_ADAPTERS

ADAPTER_TOUCHES = 6
"""Times a LoRA adapter's path moves its projection's input and output per token: the
forward reads the input and adds into the output, the backward reads both again for the
input's gradient and for the adapter's weight gradients (two more under checkpointing).
Counted from the adapter's code path, then checked on the recorded H100 runs (without the
term TRL's LoRA runs reached half the efficiency of its full fine-tune; with it all eight
runs reach 0.31 to 0.35): it is not independent of the data the efficiency is fitted on."""
INTER_NODE_GBPS = 25.0
"""GB/s one GPU sends to other nodes: a 200 Gb/s InfiniBand or RoCE link per GPU. An
assumption, not measured: no multi-node run has been recorded."""


@dataclass(frozen=True)
class Flops:
    """FLOPs per trained token, by pass."""

    forward: float
    backward: float
    recompute: float
    attention: float
    """The attention scores' share of forward + backward + recompute."""

    @property
    def total(self) -> float:
        return self.forward + self.backward + self.recompute


@dataclass(frozen=True)
class Hardware:
    """What one device can do: peak FLOP/s in the job's dtype, memory and link bandwidth in
    bytes/s. From the catalog for a GPU; measured by the bench for the CPU."""

    flops: float
    memory_bps: float
    link_bps: float
    name: str


@dataclass(frozen=True)
class Prediction:
    tokens_per_s: float
    """Per device."""
    step_s: float
    compute_s: float
    """The FLOPs at peak, before the efficiency."""
    memory_s: float
    """The weight and optimizer traffic at the memory bandwidth, before the efficiency."""
    adapter_s: float
    """LoRA's adapter path at the memory bandwidth, before the efficiency."""
    comm_s: float
    efficiency: float
    flops: Flops


def _multiplying_params(job: Job) -> float:
    model = job.model
    embed = float(model.vocab_size * model.hidden_size)
    total = model.params_b * 1e9
    return float(total if model.tied_embeddings else max(total - embed, 0.0))


def flops_per_token(job: Job) -> Flops:
    """The FLOPs one trained token costs (the module docstring's formula)."""
    spec, model = job.spec, job.model
    n = _multiplying_params(job)
    trainable = trainable_params(spec, model, job.lora_modules)
    adapters = trainable if spec.method.kind in PEFT_ADAPTERS else 0.0
    frozen = unfrozen_params(spec, model, job.lora_modules)
    base = (min(trainable, n) if spec.method.kind not in PEFT_ADAPTERS
            else unfrozen_base(spec, frozen))
    head_dim = model.head_dim or model.hidden_size // max(model.num_heads, 1)
    seq = job.max_seq_len or model.context_len or 2048
    attention = 4.0 * attention_layers(model) * model.num_heads * head_dim * seq
    forward = 2 * n + 2 * adapters + attention
    backward = 2 * n + 2 * base + 4 * adapters + 2 * attention
    recompute = forward if spec.training.gradient_checkpointing else 0.0
    passes = 3.0 + (1.0 if recompute else 0.0)
    return Flops(forward, backward, recompute, attention * passes)


def step_bytes(job: Job) -> float:
    """Memory traffic of one step on one device: the weights read per pass over each
    micro-batch, and the optimizer's read and write of parameters, gradients and two
    moments of every trainable parameter."""
    spec = job.spec
    weight = load_bytes(spec)
    passes = 3 if spec.training.gradient_checkpointing else 2
    weights = job.model.params_b * 1e9 * weight * passes * job.gradient_accumulation_steps
    trainable = trainable_params(spec, job.model, job.lora_modules)
    return float(weights + trainable * 4 * weight * 2)


def adapter_bytes(job: Job) -> float:
    """Memory traffic of LoRA's adapter path in one step on one device: the adapted
    projections' inputs and outputs, ``ADAPTER_TOUCHES`` times, in the adapters' dtype
    (PEFT keeps them in fp32 over a bf16 model and casts the input up: twice the bytes).
    The adapted widths come from the adapters' size: r x (in + out) per projection."""
    spec = job.spec
    if spec.method.kind not in LORA_FAMILY:
        return 0.0
    widths = trainable_params(spec, job.model, job.lora_modules) / spec.method.lora_settings.rank
    touches = ADAPTER_TOUCHES + (2 if spec.training.gradient_checkpointing else 0)
    dtype = trainable_bytes(spec, load_bytes(spec), job.strategy)
    return float(job.tokens_per_step / max(job.world_size, 1) * widths * touches * dtype)


def comm_bytes(job: Job) -> float:
    """Bytes one device sends per step: DDP's all-reduce of the gradients (2 (n-1)/n of
    them, a ring), FSDP / ZeRO-3's two all-gathers of the weights and reduce-scatter of the
    gradients per micro-batch (3 (n-1)/n of the weights); nothing on one device."""
    n = job.world_size
    if n <= 1 or job.strategy == "none":
        return 0.0
    share = (n - 1) / n
    weight = load_bytes(job.spec)
    if job.strategy == "ddp":
        grads = trainable_params(job.spec, job.model, job.lora_modules) * weight
        return float(2 * share * grads)
    weights = job.model.params_b * 1e9 * weight
    return float(3 * share * weights * job.gradient_accumulation_steps)


def hardware_of(job: Job) -> Hardware | None:
    """The catalog's figures for the job's accelerator in its dtype; None for a CPU job, an
    unset accelerator or one whose peak the vendor does not publish."""
    acc = job.spec.resources.accelerator
    peak = peak_of(acc)
    if job.device != "cuda" or peak is None or acc is None:
        return None
    tflops = peak.tflops_fp32 if job.spec.model.dtype == "fp32" else peak.tflops_16bit
    if tflops is None or peak.memory_gbps is None or peak.link_gbps is None:
        return None
    link = peak.link_gbps if job.nodes == 1 else min(peak.link_gbps, INTER_NODE_GBPS)
    return Hardware(tflops * 1e12, peak.memory_gbps * 1e9, link * 1e9, acc)


def predict(job: Job, hardware: Hardware, efficiency: float) -> Prediction:
    """Tokens per second per device for ``job`` on ``hardware`` at ``efficiency``."""
    flops = flops_per_token(job)
    tokens = job.tokens_per_step / max(job.world_size, 1)
    compute = tokens * flops.total / hardware.flops
    memory = step_bytes(job) / hardware.memory_bps
    adapter = adapter_bytes(job) / hardware.memory_bps
    comm = comm_bytes(job) / hardware.link_bps
    step = (max(compute, memory) + adapter) / efficiency + comm
    return Prediction(tokens / step, step, compute, memory, adapter, comm, efficiency, flops)
