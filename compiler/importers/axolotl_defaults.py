"""axolotl's implicit defaults for ``axolotl train CONFIG``, as data.

Read from the axolotl 0.19.0 wheel (``pip download --no-deps axolotl==0.19.0``; it pins
transformers 5.16.1): the pydantic schema ``axolotl/utils/schemas/{config,training,peft}.py``,
the trainer builder ``axolotl/core/builders/base.py`` (warmup, logging, save / eval strategy,
save_total_limit) and ``axolotl/loaders/model.py`` (the 4-bit BitsAndBytesConfig); where
axolotl passes None, transformers' ``TrainingArguments`` default applies (max_grad_norm, Adam's
betas and epsilon, seed). Keys are written under the TRL names ``trl_reader.Reader`` reads.
"""

from __future__ import annotations

from typing import Any

TOOL = "axolotl 0.19.0 / transformers 5.16.1"

TRAIN_DEFAULTS: dict[str, Any] = {
    "per_device_train_batch_size": 1,
    "gradient_accumulation_steps": 1,
    "num_train_epochs": 1.0,
    "max_steps": -1,
    "optim": "adamw_torch_fused",
    "lr_scheduler_type": "cosine",
    "weight_decay": 0.0,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-08,
    "max_grad_norm": 1.0,
    "seed": 42,
    "gradient_checkpointing": False,
    "torch_compile": False,
    "max_length": 512,
    "packing": False,
    "val_set_size": 0.0,
    "train_on_inputs": False,
    "bf16": "auto",
    "save_total_limit": 4,
}
"""``HyperparametersConfig`` and ``AxolotlInputConfig`` (micro_batch_size 1,
gradient_accumulation_steps 1, num_epochs 1.0, optimizer adamw_torch_fused, lr_scheduler
cosine, weight_decay 0.0, sequence_len 512, sample_packing off, gradient_checkpointing off);
max_grad_norm, betas, epsilon and seed are transformers' (axolotl passes None through);
save_total_limit 4 is the trainer builder's when the config sets none."""

MODEL_DEFAULTS: dict[str, Any] = {
    "lora_dropout": 0.0,
    "bnb_4bit_quant_type": "nf4",
    "use_bnb_nested_quant": True,
    "bnb_4bit_quant_storage": "bf16",
    "use_dora": False,
}
"""``LoraConfig`` (lora_dropout 0.0 once an adapter is set) and the BitsAndBytesConfig
axolotl's model loader builds for 4-bit (nf4, double quantization, bfloat16 storage)."""

ALIASES: dict[str, str] = {
    "base_model": "model_name_or_path",
    "micro_batch_size": "per_device_train_batch_size",
    "num_epochs": "num_train_epochs",
    "optimizer": "optim",
    "lr_scheduler": "lr_scheduler_type",
    "sequence_len": "max_length",
    "sample_packing": "packing",
    "warmup_ratio": "warmup_steps",
    "eval_batch_size": "per_device_eval_batch_size",
    "peft_use_dora": "use_dora",
}
"""axolotl's key -> the TRL name it is read as."""

DEEPSPEED: dict[str, tuple[int, str, str]] = {
    "zero1.json": (1, "none", "none"),
    "zero2.json": (2, "none", "none"),
    "zero3.json": (3, "none", "none"),
    "zero3_bf16.json": (3, "none", "none"),
    "zero3_bf16_cpuoffload_all.json": (3, "cpu", "cpu"),
    "zero3_bf16_cpuoffload_params.json": (3, "none", "cpu"),
}
"""``deepspeed_configs/*.json`` axolotl ships: ZeRO stage, optimizer and parameter offload."""

FSDP_SHARDING = {"FULL_SHARD": "full_shard", "SHARD_GRAD_OP": "shard_grad_op",
                 "HYBRID_SHARD": "hybrid_shard", "NO_SHARD": "no_shard",
                 "_HYBRID_SHARD_ZERO2": "hybrid_shard_zero2"}
FSDP_WRAP = {"TRANSFORMER_BASED_WRAP": "transformer", "SIZE_BASED_WRAP": "size",
             "NO_WRAP": "none"}
FSDP_STATE = {"FULL_STATE_DICT": "full", "SHARDED_STATE_DICT": "sharded"}
