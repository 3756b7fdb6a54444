"""Tokenizer and model loading, quantization (bitsandbytes) and the PEFT method."""

from __future__ import annotations

import argparse
from typing import Any

TORCH_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}


def load_tokenizer(args: argparse.Namespace) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        args.tokenizer_name_or_path or args.model_name_or_path,
        revision=args.model_revision, trust_remote_code=args.trust_remote_code)
    if args.pad_token is not None:
        tokenizer.pad_token = args.pad_token
    if args.chat_template is not None:
        tokenizer.chat_template = args.chat_template
    return tokenizer


def require_bitsandbytes(what: str) -> Any:
    try:
        import bitsandbytes
    except ImportError:
        raise SystemExit(f"{what} needs the bitsandbytes package (and a CUDA GPU): "
                         "pip install bitsandbytes") from None
    return bitsandbytes


def _dtype(name: str) -> Any:
    import torch

    return getattr(torch, TORCH_DTYPES[name])


def quantization_config(args: argparse.Namespace) -> Any:
    if not (args.load_in_4bit or args.load_in_8bit):
        return None
    require_bitsandbytes("--load_in_4bit / --load_in_8bit (QLoRA)")
    from transformers import BitsAndBytesConfig

    if args.load_in_8bit:
        return BitsAndBytesConfig(load_in_8bit=True)  # type: ignore[no-untyped-call]
    return BitsAndBytesConfig(  # type: ignore[no-untyped-call]
        load_in_4bit=True, bnb_4bit_quant_type=args.bnb_4bit_quant_type,
        bnb_4bit_use_double_quant=args.bnb_4bit_use_double_quant,
        bnb_4bit_compute_dtype=_dtype(args.bnb_4bit_compute_dtype),
        bnb_4bit_quant_storage=(_dtype(args.bnb_4bit_quant_storage)
                                if args.bnb_4bit_quant_storage != "uint8" else "uint8"))


def build_model(args: argparse.Namespace, device_index: int | None = None) -> Any:
    from transformers import AutoModelForCausalLM

    if args.peft_method == "qlora" and not (args.load_in_4bit or args.load_in_8bit):
        raise SystemExit("--peft_method qlora needs --load_in_4bit or --load_in_8bit")
    kwargs: dict[str, Any] = {"revision": args.model_revision,
                              "trust_remote_code": args.trust_remote_code}
    import transformers
    from packaging.version import Version

    dtype_key = "dtype" if Version(transformers.__version__) >= Version("4.56") else "torch_dtype"
    kwargs[dtype_key] = "auto" if args.torch_dtype == "auto" else _dtype(args.torch_dtype)
    if args.attn_implementation is not None:
        kwargs["attn_implementation"] = args.attn_implementation
    quant = quantization_config(args)
    if quant is not None:
        kwargs["quantization_config"] = quant
        if device_index is not None:
            kwargs["device_map"] = {"": device_index}  # quantized weights load on this GPU
    model: Any = AutoModelForCausalLM.from_pretrained(args.model_name_or_path, **kwargs)
    model.config.use_cache = False
    kbit = quant is not None or getattr(model.config, "quantization_config", None) is not None
    if kbit and args.peft_method != "none":
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(  # type: ignore[no-untyped-call]
            model, use_gradient_checkpointing=args.gradient_checkpointing)
    elif args.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        if args.peft_method != "none":
            model.enable_input_require_grads()  # frozen embeddings: checkpointed inputs need grad
    config = peft_config(args)
    if config is None:
        return model
    from peft import get_peft_model

    return get_peft_model(model, config)


def peft_config(args: argparse.Namespace) -> Any:
    method = args.peft_method
    if method == "none":
        return None
    if method in ("lora", "dora", "qlora", "gptq_lora"):
        from peft import LoraConfig

        targets = args.target_modules
        init: Any = True if args.init_lora_weights == "default" else args.init_lora_weights
        return LoraConfig(
            r=args.lora_r, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
            target_modules=targets[0] if targets == ["all-linear"] else targets,
            bias=args.lora_bias, modules_to_save=args.modules_to_save or None,
            init_lora_weights=init, use_dora=method == "dora", task_type="CAUSAL_LM")
    if method == "ia3":
        from peft import IA3Config

        return IA3Config(target_modules=args.ia3_target_modules,
                         feedforward_modules=args.ia3_feedforward_modules,
                         modules_to_save=args.modules_to_save or None, task_type="CAUSAL_LM")
    from peft import PromptTuningConfig, PromptTuningInit

    text = args.prompt_tuning_init_text
    return PromptTuningConfig(
        num_virtual_tokens=args.num_virtual_tokens, task_type="CAUSAL_LM",
        prompt_tuning_init=PromptTuningInit.TEXT if text else PromptTuningInit.RANDOM,
        prompt_tuning_init_text=text,
        tokenizer_name_or_path=(args.tokenizer_name_or_path or args.model_name_or_path)
        if text else None)
