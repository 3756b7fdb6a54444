"""TRL's implicit defaults for ``trl sft --config``, as data.

Read from the dataclass defaults of ``trl.SFTConfig`` (over ``transformers.TrainingArguments``),
``trl.ModelConfig`` and ``trl.ScriptArguments`` in TRL 1.16.0 with transformers 5.23.0.
``tests/importers/test_trl_import.py`` compares this table with the installed TRL when present.
"""

from __future__ import annotations

from typing import Any

from ftspec.compiler.importers.no_effect import TRL as TRL_NO_EFFECT
from ftspec.compiler.importers.transformers_defaults import TRAINING_ARGUMENTS

TRL_VERSION = "1.16.0"
TRANSFORMERS_VERSION = "5.23.0"
TOOL = f"TRL {TRL_VERSION} / transformers {TRANSFORMERS_VERSION}"

SFT_DEFAULTS: dict[str, Any] = TRAINING_ARGUMENTS | {
    "learning_rate": 2e-05,
    "fp16": False,
    "gradient_checkpointing": True,
    "logging_steps": 10,
    "max_length": 1024,
    "packing": False,
    "dataset_text_field": "text",
    "report_to": "none",
    "assistant_only_loss": False,
}
"""``TrainingArguments`` (``transformers_defaults``) with ``SFTConfig``'s own fields over it
(``bf16`` is None there: True unless ``fp16``, per SFTConfig's docs).
``assistant_only_loss`` False: a conversational row trains on every token (``SFTTrainer``
asks the template for an assistant mask only when it is True); ``completion_only_loss``
None: prompt-completion rows train on the completion only (trl/trainer/sft_trainer.py)."""

MODEL_DEFAULTS: dict[str, Any] = {
    "model_revision": "main",
    "use_peft": False,
    "lora_r": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
    "lora_task_type": "CAUSAL_LM",
    "use_dora": False,
    "load_in_8bit": False,
    "load_in_4bit": False,
    "bnb_4bit_quant_type": "nf4",
    "use_bnb_nested_quant": False,
}
"""``ModelConfig`` fields."""

SCRIPT_DEFAULTS: dict[str, Any] = {
    "dataset_train_split": "train",
    "dataset_test_split": "test",
}
"""``ScriptArguments`` fields."""

LEGACY_KEYS: dict[str, str] = {
    "max_seq_length": "max_length",
    "torch_dtype": "dtype",
    "evaluation_strategy": "eval_strategy",
    "warmup_ratio": "warmup_steps",
}
"""Keys older TRL/transformers releases read, renamed since: imported under the new name
(transformers 5 reads a ``warmup_steps`` below 1 as the ratio ``warmup_ratio`` was)."""
LEGACY_READERS: dict[str, str] = {
    "max_seq_length": "TRL 0.19 and older (SFTConfig renamed it in 0.16, removed it in 0.20)",
    "torch_dtype": "TRL 0.29 and older (ModelConfig; removed in TRL 1.0)",
    "evaluation_strategy": "transformers 4 before 4.46 (TrainingArguments)",
    "warmup_ratio": "transformers 4 (TrainingArguments; transformers 5 reads a warmup_steps "
                    "below 1 as the ratio)",
}
"""Which releases read each of :data:`LEGACY_KEYS` (huggingface/trl's history of
``sft_config.py`` and ``model_config.py``): a recipe using one was written for them, and the
import says so at the key. The alignment-handbook's recipes (``trl>=0.19.1``) still say
``max_seq_length`` and ``torch_dtype``."""

NO_EFFECT: tuple[str, ...] = tuple(sorted(TRL_NO_EFFECT))
"""Keys that change nothing that trains (``no_effect``)."""

FMS_TOOL = f"fms-hf-tuning (tuning/config/configs.py) / transformers {TRANSFORMERS_VERSION}"
FMS_SFT_DEFAULTS: dict[str, Any] = SFT_DEFAULTS | {
    "learning_rate": 5e-05,
    "gradient_checkpointing": False,
    "logging_steps": 500,
    "logging_strategy": "epoch",
    "save_strategy": "epoch",
    "max_length": 4096,
}
"""fms-hf-tuning's JSON: transformers ``TrainingArguments`` defaults (5.23.0) where fms's
subclass does not set them (``learning_rate``, ``gradient_checkpointing``, ``logging_steps``),
and fms's own (``max_seq_length`` 4096, epoch logging and saving, no packing)."""
FMS_MODEL_DEFAULTS: dict[str, Any] = MODEL_DEFAULTS | {
    "lora_r": 8,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
    "dtype": "bfloat16",
    "use_flash_attn": True,
}
"""fms-hf-tuning's ``ModelArguments`` (``torch_dtype`` bfloat16, ``use_flash_attn``) and
``LoraConfig`` (tuning/config/peft_config.py: r 8, alpha 32, dropout 0.05)."""
FMS_PT_DEFAULTS: dict[str, Any] = {
    "prompt_tuning_init": "TEXT",
    "num_virtual_tokens": 8,
    "prompt_tuning_init_text": "Classify if the tweet is a complaint or not:",
}
"""fms-hf-tuning's ``PromptTuningConfig`` (tuning/config/peft_config.py), ``peft_method: pt``."""
FMS_KEYS: dict[str, str] = {"r": "lora_r", "target_modules": "lora_target_modules"}
"""fms's LoRA key names -> TRL's."""
