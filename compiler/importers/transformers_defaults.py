"""``transformers.TrainingArguments``' own defaults, as data: the part of the TRL and
LLaMA-Factory tables (``trl_defaults``, ``llamafactory_defaults``) that both inherit
unchanged.

Read from ``transformers/training_args.py`` in 4.57.1 and 5.23.0: these values are the same
in both (``optim`` adamw_torch_fused with torch 2.8 or later). What differs between the two
releases (``report_to``: all in 4.x, none in 5.x) and what the tools change (learning rate,
logging steps, gradient checkpointing, sequence length) stays in each tool's table.
"""

from __future__ import annotations

from typing import Any

TRAINING_ARGUMENTS: dict[str, Any] = {
    "learning_rate": 5e-05,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "num_train_epochs": 3.0,
    "max_steps": -1,
    "lr_scheduler_type": "linear",
    "warmup_steps": 0,
    "weight_decay": 0.0,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-08,
    "max_grad_norm": 1.0,
    "optim": "adamw_torch_fused",
    "seed": 42,
    "gradient_checkpointing": False,
    "logging_steps": 500,
    "logging_strategy": "steps",
    "save_strategy": "steps",
    "save_steps": 500,
    "eval_strategy": "no",
    "torch_compile": False,
}
