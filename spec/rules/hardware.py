"""GPUs, nodes and accelerators."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.catalog.accelerators import ACCELERATORS
from ftspec.spec.catalog.models import MODEL_FAMILIES
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.method import LORA_FAMILY, PEFT_ADAPTERS
from ftspec.spec.rules._diag import error


def gpus_divisible_by_nodes(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    r = spec.resources
    if r.gpus is not None and r.gpus_per_node is not None:
        yield error(
            ("resources", "gpus"),
            "give either resources.gpus (total) or resources.gpus_per_node, not both",
            "gpus-both",
        )
    elif r.gpus is not None and r.gpus % r.nodes:
        yield error(
            ("resources", "gpus"),
            f"{r.gpus} GPUs cannot be spread evenly over {r.nodes} nodes",
            "gpus-divisible",
            hint=f"use a multiple of {r.nodes}",
        )


def accelerator_required(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    r = spec.resources
    if r.total_gpus > 0 and r.accelerator is None:
        yield error(
            ("resources",),
            f"resources ask for {r.total_gpus} GPUs but name no accelerator",
            "accelerator-required",
            hint="set resources.accelerator, e.g. nvidia-a100-80gb",
        )


def bf16_supported(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    r = spec.resources
    if spec.model.dtype != "bf16" or r.accelerator is None or r.total_gpus == 0:
        return
    acc = ACCELERATORS[r.accelerator]
    if not acc.bf16:
        default = "" if "dtype" in spec.model.model_fields_set else " (the default)"
        yield error(
            ("model", "dtype"),
            f"bf16{default} needs an Ampere-or-newer GPU; {acc.display} ({acc.architecture}) "
            "has no bf16 support",
            "bf16-unsupported",
            hint="use dtype: fp16, or an A10G/L4/A100/H100-class accelerator",
        )


def precision_coherent(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    """mixed needs a 16-bit compute dtype; pure fp16 cannot train stably; fp16 autocast
    trains PEFT adapters only.

    Pure fp16 keeps weights and Adam's moments in fp16: updates below fp16's resolution
    (~1e-3 relative) vanish and the second moment under- and overflows (range 6e-5..65504),
    and a loss scaler cannot help because there are no fp32 weights to unscale into (PyTorch's
    GradScaler refuses fp16 gradients). bf16 has fp32's range, so pure bf16 is usable.

    autocast over fp16 weights fails the same way at run time when an fp16 weight trains:
    transformers' Trainer turns ``fp16`` into accelerate's GradScaler, whose ``unscale_`` (at
    gradient clipping, or in ``step``) raises "Attempting to unscale FP16 gradients." for an
    fp16 trainable weight. The PEFT methods train adapters that PEFT keeps in fp32 over an
    fp16 base (``autocast_adapter_dtype``), so the scaler sees fp32 gradients and the run
    trains (axolotl's and LLaMA-Factory's ``fp16: true`` LoRA on GPUs without bf16), unless
    the adapter config also trains base tensors, which stay fp16 (``fp16_trained``).
    Over fp32 weights there is no lower dtype to autocast to.
    """
    m = spec.model
    if m.precision == "mixed" and m.dtype == "fp32":
        yield error(("model", "precision"), "mixed precision computes in a 16-bit dtype; "
                    "model.dtype is fp32, so there is nothing to mix", "precision-mixed-fp32",
                    hint="use dtype: bf16 with precision: mixed, or drop precision")
    if m.precision == "pure" and m.dtype == "fp16":
        yield error(("model", "precision"), "pure fp16 keeps weights and optimizer state in "
                    "fp16: small updates vanish and there is no fp32 copy to unscale "
                    "gradients into", "precision-pure-fp16",
                    hint="use precision: mixed with fp16, or dtype: bf16 for pure 16-bit")
    trained = fp16_trained(spec) if m.precision == "autocast" and m.dtype == "fp16" else None
    if trained is not None:
        yield error(("model", "precision"), f"autocast over fp16 weights trains {trained} in "
                    "fp16: transformers' Trainer scales fp16 losses with torch's GradScaler, "
                    "which refuses their fp16 gradients (\"Attempting to unscale FP16 "
                    "gradients.\") at the first optimizer step; only the adapters PEFT keeps "
                    "in fp32 train under fp16 autocast", "precision-autocast-fp16",
                    hint="train adapters only (lora, qlora, dora, gptq_lora, ia3, "
                    "prompt_tuning; lora.bias none, no modules_to_save), use precision: mixed "
                    "(fp32 weights, fp16 autocast), or dtype: bf16 with precision: autocast")
    if m.precision == "autocast" and m.dtype == "fp32":
        yield error(("model", "precision"), "autocast computes in a 16-bit dtype over weights "
                    "stored in it; model.dtype is fp32, so there is nothing to autocast to",
                    "precision-autocast-fp32",
                    hint="use dtype: bf16 with precision: autocast, or drop precision")


def fp16_trained(spec: FineTuneSpec) -> str | None:
    """What trains as fp16 tensors when the weights are stored in fp16 (None: only the
    adapters PEFT upcasts to fp32): a full fine-tune's weights; LoRA's ``bias`` (the base
    layers' own biases) and ``modules_to_save`` (PEFT's trained copies of base modules)."""
    method = spec.method
    if method.kind not in PEFT_ADAPTERS:
        return f"every weight (method.kind {method.kind})"
    lora = method.lora if method.kind in LORA_FAMILY else None
    if lora is not None and lora.bias != "none":
        return f"the base model's biases (method.lora.bias {lora.bias})"
    if lora is not None and lora.modules_to_save:
        return "copies of the base modules in method.lora.modules_to_save"
    return None


def expert_parallel(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    """The model has experts the degree divides, and the training processes split into
    expert-parallel groups (GPUs, or CPU processes on a CPU run)."""
    ep = spec.distributed.expert_parallel
    if ep == 1:
        return
    path = ("distributed", "expert_parallel")
    arch = spec.model.architecture
    family = MODEL_FAMILIES.get(spec.model.family or "") or (
        arch.as_family() if arch is not None else None)
    if family is not None and family.num_experts == 0:
        yield error(path, f"{family.display} is not a mixture-of-experts model", "ep-dense",
                    hint="set model.architecture.num_experts for a custom MoE model"
                    if arch is not None and spec.model.family is None else None)
    elif family is not None and family.num_experts % ep:
        yield error(path, f"{family.display} has {family.num_experts} experts per layer, "
                    f"which expert-parallel degree {ep} does not divide", "ep-experts",
                    hint="use a divisor of " + str(family.num_experts))
    r = spec.resources
    if r.total_gpus and r.total_gpus % ep:
        yield error(path, f"{r.total_gpus} GPUs are not divisible by expert-parallel "
                    f"degree {ep}", "ep-divisible")
    elif r.world_size % ep:
        yield error(path, f"{r.world_size} training processes are not divisible by "
                    f"expert-parallel degree {ep}", "ep-divisible",
                    hint="set resources.processes_per_node" if not r.total_gpus else None)


FLASH_ATTENTION_ARCHITECTURES = frozenset({"ampere", "ada", "hopper"})
"""flash-attn 2 runs on Ampere, Ada and Hopper GPUs (not Turing T4, not Volta V100)."""


def flash_attention_supported(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    if spec.model.attn_implementation != "flash_attention_2":
        return
    path = ("model", "attn_implementation")
    if spec.model.dtype == "fp32":
        yield error(path, "flash-attention 2 computes in fp16 or bf16 only; model.dtype is "
                    "fp32", "flash-attn-dtype", hint="use attn_implementation: sdpa, or "
                    "dtype bf16 / fp16")
    r = spec.resources
    if r.accelerator is not None and r.total_gpus > 0:
        acc = ACCELERATORS[r.accelerator]
        if acc.architecture not in FLASH_ATTENTION_ARCHITECTURES:
            yield error(path, f"flash-attention 2 needs an Ampere-or-newer GPU; "
                        f"{acc.display} ({acc.architecture}) cannot run it",
                        "flash-attn-gpu", hint="use attn_implementation: sdpa")
    elif r.total_gpus == 0:
        yield error(path, "flash-attention 2 runs on GPUs only; this job has none",
                    "flash-attn-gpu", hint="use attn_implementation: sdpa")
