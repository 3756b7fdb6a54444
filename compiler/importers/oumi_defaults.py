"""Oumi's implicit defaults for a ``TrainingConfig`` and a ``JobConfig``, as data.

Read from the dataclass defaults in ``oumi/core/configs/params/{training,model,data,peft,
fsdp}_params.py``, ``training_config.py`` and ``job_config.py`` of the Oumi 0.9 wheel on PyPI
(``oumi-0.9-py3-none-any.whl``), and from ``TrainingParams.to_hf`` there for what Oumi hands
transformers (``save_steps > 0``: save by steps; ``max_grad_norm: null``: 0, no clipping;
``enable_*``: ``report_to``; warm-up unset: 0 steps). Oumi cannot be installed next to
ftspec's pins (it requires torch < 2.13, transformers < 5.17, trl < 1.7, numpy < 2.4,
omegaconf 2.4.0.dev4), so the importer reads the YAML as data with these tables.
"""

from __future__ import annotations

from typing import Any

OUMI_VERSION = "0.9"
TOOL = f"Oumi {OUMI_VERSION}"

TRAINING_DEFAULTS: dict[str, Any] = {
    "trainer_type": "HF",
    "use_peft": False,
    "enable_gradient_checkpointing": False,
    "output_dir": "output",
    "per_device_train_batch_size": 8,
    "per_device_eval_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "max_steps": -1,
    "num_train_epochs": 3,
    "save_epoch": False,
    "save_steps": 500,
    "save_final_model": True,
    "seed": 42,
    "enable_wandb": False,
    "enable_mlflow": False,
    "enable_tensorboard": True,
    "logging_strategy": "steps",
    "logging_steps": 50,
    "eval_strategy": "no",
    "eval_steps": 500,
    "learning_rate": 5e-05,
    "lr_scheduler_type": "linear",
    "warmup_ratio": None,
    "warmup_steps": None,
    "optimizer": "adamw_torch",
    "weight_decay": 0.0,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-08,
    "sgd_momentum": 0.0,
    "mixed_precision_dtype": "NONE",
    "compile": False,
    "resume_from_checkpoint": None,
    "dataloader_num_workers": 0,
    "max_grad_norm": 1.0,
}
"""``TrainingParams`` fields the importer reads."""

MODEL_DEFAULTS: dict[str, Any] = {
    "torch_dtype_str": "auto",
    "attn_implementation": None,
    "trust_remote_code": False,
    "model_max_length": None,
    "model_revision": None,
    "tokenizer_name": None,
    "tokenizer_pad_token": None,
    "chat_template": None,
    "device_map": "auto",
    "load_pretrained_weights": True,
}
"""``ModelParams`` fields the importer reads (``model_name`` is required)."""

PEFT_DEFAULTS: dict[str, Any] = {
    "lora_r": 8,
    "lora_alpha": 8,
    "lora_dropout": 0.0,
    "lora_target_modules": None,
    "lora_modules_to_save": None,
    "lora_bias": "none",
    "lora_init_weights": "DEFAULT",
    "lora_task_type": "CAUSAL_LM",
    "q_lora": False,
    "q_lora_bits": 4,
    "bnb_4bit_quant_type": "fp4",
    "use_bnb_nested_quant": False,
    "bnb_4bit_quant_storage": "uint8",
    "bnb_4bit_compute_dtype": "float32",
    "peft_save_mode": "ADAPTER_ONLY",
}
"""``PeftParams`` fields."""

FSDP_DEFAULTS: dict[str, Any] = {
    "enable_fsdp": False,
    "sharding_strategy": "FULL_SHARD",
    "cpu_offload": False,
    "mixed_precision": None,
    "backward_prefetch": "BACKWARD_PRE",
    "forward_prefetch": False,
    "use_orig_params": None,
    "state_dict_type": "FULL_STATE_DICT",
    "auto_wrap_policy": "NO_WRAP",
    "min_num_params": 100000,
    "transformer_layer_cls": None,
    "sync_module_states": True,
}
"""``FSDPParams`` fields. Oumi runs FSDP through accelerate's FSDP1 plugin (its
``FSDP_*`` environment variables name no FSDP version); ``use_orig_params: null`` is
False for PEFT without ``training.compile``, else True (``core/distributed.py``)."""

DATASET_DEFAULTS: dict[str, Any] = {
    "split": "train",
    "subset": None,
    "mixture_proportion": None,
}
"""``DatasetParams`` fields."""

SPLIT_DEFAULTS: dict[str, Any] = {
    "pack": False,
    "mixture_strategy": "first_exhausted",
}
"""``DatasetSplitParams`` fields."""

JOB_DEFAULTS: dict[str, Any] = {"num_nodes": 1}
"""``JobConfig`` fields (``resources.accelerators`` unset: no GPU)."""

ALPACA_DATASETS = ("yahma/alpaca-cleaned", "tatsu-lab/alpaca")
"""Names Oumi registers for its ``AlpacaDataset`` (``datasets/sft/alpaca.py``): rows with
``instruction`` / ``input`` / ``output`` columns."""

CHAT_DATASETS = ("HuggingFaceH4/ultrachat_200k", "allenai/tulu-3-sft-mixture",
                 "allenai/WildChat-1M", "argilla/magpie-ultra-v0.1",
                 "Magpie-Align/Llama-3-Magpie-Pro-1M-v0.1", "Magpie-Align/Magpie-Pro-300K-Filtered")
"""Registered Oumi datasets whose rows hold an OpenAI-style ``messages`` list."""

PRETRAINING_DATASETS: dict[str, str] = {
    "allenai/c4": "text", "allenai/dolma": "text", "tiiuae/falcon-refinedweb": "text",
    "HuggingFaceFW/fineweb-edu": "text", "EleutherAI/pile": "text",
    "togethercomputer/RedPajama-Data-1T": "text", "togethercomputer/RedPajama-Data-V2": "text",
    "gmongaras/SlimPajama-627B_Reupload": "text", "cerebras/SlimPajama-627B": "text",
    "bigcode/starcoderdata": "content", "bigcode/the-stack": "content",
    "roneneldan/TinyStories": "text", "nampdn-ai/tiny-textbooks": "text",
    "wikimedia/wikipedia": "text", "Salesforce/wikitext": "text",
    "PleIAs/YouTube-Commons": "text",
}
"""Names Oumi registers for its pretraining datasets (``datasets/pretraining/``,
``BasePretrainingDataset``): plain documents in one text column (``_data_column``), whose
tokens are concatenated and cut into ``seq_length``-token sequences, every token trained."""

SKYPILOT_ACCELERATORS: dict[str, str] = {
    "T4": "nvidia-t4", "V100": "nvidia-v100-16gb", "V100-32GB": "nvidia-v100-32gb",
    "A10G": "nvidia-a10g", "L4": "nvidia-l4", "L40S": "nvidia-l40s",
    "A100": "nvidia-a100-40gb", "A100-80GB": "nvidia-a100-80gb",
    "H100": "nvidia-h100-80gb", "H200": "nvidia-h200",
}
"""SkyPilot's accelerator names (``resources.accelerators: "A100:4"``; plain ``A100`` is
the 40 GB part) -> the spec's ``resources.accelerator``."""
