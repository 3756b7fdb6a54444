"""``model.dtype`` and ``model.precision`` from TRL's / fms-hf-tuning's two precision keys.

TRL and transformers split precision in two: the dtype the weights load in (``dtype``, once
``torch_dtype``; TRL's ``ModelConfig`` default float32, fms-hf-tuning's bfloat16) and the
autocast flag (``bf16`` / ``fp16``; SFTConfig's ``bf16`` is True unless ``fp16``,
transformers' and so fms's is False). The spec says what is stored and what is computed:
- fp32 weights under autocast: mixed precision in the autocast dtype;
- no autocast: pure precision in the load dtype;
- bf16 weights under bf16 autocast: autocast precision (weights, gradients and optimizer
  state in bf16, autocast's fp32 ops in fp32);
- fp16 weights under fp16 autocast: autocast precision with PEFT's LoRA (the adapters train
  in fp32, which transformers' GradScaler unscales); a full model, or LoRA with
  ``lora_modules_to_save`` (fp16 copies of base modules train), cannot train so
  (the GradScaler refuses fp16 gradients). The spec has one dtype for weights and autocast:
  the remaining combinations are imported as the nearest mode with a warning at ``dtype``.
"""

from __future__ import annotations

from ftspec.compiler.importers.trl_reader import Reader
from ftspec.spec.dtypes import FROM_TORCH

NAMED = FROM_TORCH


def import_precision(r: Reader) -> None:
    fp16 = r.value("fp16", r.sft) is True
    bf16 = r.value("bf16")
    if bf16 is None:  # SFTConfig: True unless fp16; transformers' TrainingArguments: False
        bf16 = not fp16 and not r.fms
    autocast = "fp16" if fp16 else "bf16" if bf16 is True else None
    flag = r.origin("fp16") if fp16 else r.origin("bf16") if r.has("bf16") else \
        f"{r.tool} default (bf16: {bool(bf16)})"
    raw = str(r.value("dtype", r.model) or "float32")  # TRL's ModelConfig default
    at = r.origin("dtype")
    key = (r.key("dtype") or "",) if r.has("dtype") else ()
    loaded = NAMED.get(raw, autocast or "bf16")
    if raw not in NAMED:
        r.draft.warn(key, f"dtype {raw} loads the checkpoint's own dtype; imported as {loaded}",
                     hint="set model.dtype to the checkpoint's dtype if it differs")
    if autocast is None:
        dtype, mode = loaded, "pure"
        if loaded == "fp16":
            mode = "mixed"
            r.draft.warn(key, "pure fp16 (fp16 weights without fp32 master copies) does not "
                         "train stably; imported as mixed fp16")
    elif loaded == "fp32":
        dtype, mode = autocast, "mixed"
    elif autocast == "bf16":
        dtype, mode = "bf16", "autocast"
        if loaded != "bf16":
            r.draft.warn(key, f"weights load in {raw} but autocast computes in bf16; the "
                         "spec has one dtype: imported as bf16 weights under bf16 autocast")
    elif loaded == "fp16" and _fp32_adapters_only(r):
        dtype, mode = "fp16", "autocast"
    else:
        dtype, mode = "fp16", "mixed"
        r.draft.warn(key, "fp16 autocast over " + ("fp16 weights: transformers' GradScaler "
                     "refuses fp16 gradients of trained fp16 weights (a full fine-tune, or "
                     "lora_modules_to_save)" if loaded == "fp16" else f"{raw} weights")
                     + "; imported as mixed fp16 (fp32 weights)")
    r.draft.put(("model", "dtype"), dtype, at if autocast is None else flag)
    if dtype != "fp16" or mode != "mixed":  # fp16's default is mixed
        r.draft.put(("model", "precision"), mode, f"{at}; {flag}")


def _fp32_adapters_only(r: Reader) -> bool:
    """Only PEFT's LoRA adapters train (PEFT keeps them in fp32 over an fp16 base): PEFT on,
    and no ``lora_modules_to_save`` (trained copies of base modules, in fp16)."""
    return peft_on(r) and not r.value("lora_modules_to_save")


def peft_on(r: Reader) -> bool:
    """PEFT's LoRA trains: fms-hf-tuning's ``peft_method: lora``, TRL's ``use_peft``."""
    return bool(r.value("peft_method") == "lora" if r.fms else r.value("use_peft", r.model) is True)
