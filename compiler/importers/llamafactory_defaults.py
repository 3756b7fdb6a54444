"""LLaMA-Factory's implicit defaults for ``llamafactory-cli train CONFIG`` (stage sft), as data.

Read from the llamafactory 0.9.5 wheel (``pip download --no-deps llamafactory==0.9.5``):
``llamafactory/hparams/{finetuning,data,model}_args.py`` and ``parser.py`` (packing only in
stage pt), and from the ``transformers.TrainingArguments`` its ``Seq2SeqTrainingArguments``
inherit, in transformers 4.57.1 (the newest 4.x LLaMA-Factory 0.9.5 accepts; its examples'
``warmup_ratio`` is a 4.x key), with torch 2.8 or later (``optim`` adamw_torch_fused there). Keys are written under the TRL names
``trl_reader.Reader`` reads, so the TRL importer's training mapping applies unchanged.
"""

from __future__ import annotations

from typing import Any

from ftspec.compiler.importers.transformers_defaults import TRAINING_ARGUMENTS

TOOL = "LLaMA-Factory 0.9.5 / transformers 4.57.1"

TRAIN_DEFAULTS: dict[str, Any] = TRAINING_ARGUMENTS | {
    "gradient_checkpointing": True,
    "report_to": "all",
    "max_length": 2048,
    "packing": False,
}
"""transformers 4.57.1 ``TrainingArguments`` (``transformers_defaults``; ``optim`` adamw_torch_fused on torch >= 2.8,
``report_to`` all: every installed integration), except ``gradient_checkpointing``: LLaMA-Factory turns it on unless
``disable_gradient_checkpointing``; ``max_length`` is ``cutoff_len`` (2048), ``packing`` is
off outside stage pt."""

MODEL_DEFAULTS: dict[str, Any] = {
    "finetuning_type": "lora",
    "lora_r": 8,
    "lora_dropout": 0.0,
    "lora_target": "all",
    "bnb_4bit_quant_type": "nf4",
    "use_bnb_nested_quant": True,
    "quantization_method": "bnb",
    "use_dora": False,
    "stage": "sft",
}
"""``FinetuningArguments`` (``lora_alpha`` is None there: ``lora_rank`` x 2) and
``ModelArguments`` (``quantization_type`` nf4, ``double_quantization`` True)."""

ALIASES: dict[str, str] = {
    "cutoff_len": "max_length",
    "lora_rank": "lora_r",
    "quantization_type": "bnb_4bit_quant_type",
    "double_quantization": "use_bnb_nested_quant",
    "warmup_ratio": "warmup_steps",
    "evaluation_strategy": "eval_strategy",
}
"""LLaMA-Factory's key -> the TRL name it is read as (warmup_ratio: transformers 5 reads a
``warmup_steps`` below 1 as that ratio)."""

DATASETS: dict[str, tuple[str, str, str | None]] = {
    "identity": ("file://data/identity.json", "alpaca", None),
    "alpaca_en_demo": ("file://data/alpaca_en_demo.json", "alpaca", None),
    "alpaca_zh_demo": ("file://data/alpaca_zh_demo.json", "alpaca", None),
    "alpaca_en": ("hf://llamafactory/alpaca_en", "alpaca", None),
    "alpaca_zh": ("hf://llamafactory/alpaca_zh", "alpaca", None),
    "alpaca_gpt4_en": ("hf://llamafactory/alpaca_gpt4_en", "alpaca", None),
    "alpaca_gpt4_zh": ("hf://llamafactory/alpaca_gpt4_zh", "alpaca", None),
    "lima": ("hf://llamafactory/lima", "sharegpt", "conversations"),
    "slimorca": ("hf://Open-Orca/SlimOrca", "sharegpt", "conversations"),
    "ultrachat_200k": ("hf://HuggingFaceH4/ultrachat_200k", "openai", "messages"),
    "open_thoughts": ("hf://llamafactory/OpenThoughts-114k", "openai", "messages"),
    "c4_demo": ("file://data/c4_demo.jsonl", "text", "text"),
}
"""Names from LLaMA-Factory's ``data/dataset_info.json`` (commit 00577a85) -> (uri, layout,
column). ``file://data/…``: the files ship in LLaMA-Factory's ``data`` folder (its default
``dataset_dir``). ultrachat_200k reads split train_sft."""
DATASET_SPLITS: dict[str, str] = {"ultrachat_200k": "train_sft"}

STAGES = ("pt", "sft", "rm", "ppo", "dpo", "kto")

DEEPSPEED: dict[str, tuple[int, str, str]] = {
    "ds_z0_config.json": (0, "none", "none"),
    "ds_z2_config.json": (2, "none", "none"),
    "ds_z2_offload_config.json": (2, "cpu", "none"),
    "ds_z3_config.json": (3, "none", "none"),
    "ds_z3_offload_config.json": (3, "cpu", "cpu"),
}
"""``examples/deepspeed/*.json`` LLaMA-Factory ships: ZeRO stage, optimizer and parameter
offload."""
