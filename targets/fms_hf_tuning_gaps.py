"""The fms_hf_tuning launcher's field contract: spec fields ``tuning.sft_trainer``'s command
line (as the SFTTrainer actuator writes it) does not carry."""

from __future__ import annotations

from ftspec.targets.gap import ERROR as _E
from ftspec.targets.gap import WARNING as _W
from ftspec.targets.gap import Gap

_NO_FLAG = "fms-hf-tuning's command line has no flag for {}"

GAPS: tuple[Gap, ...] = (
    Gap(("model", "revision"), _E, _NO_FLAG.format("a model revision"),
        "pin the revision in the model files (a local folder)"),
    Gap(("model", "trust_remote_code"), _W, _NO_FLAG.format("trust_remote_code")),
    Gap(("model", "device_map"), _W, _NO_FLAG.format("device_map")),
    Gap(("model", "use_cache"), _W, "the Trainer turns the KV cache off for training"),
    Gap(("model", "auto_class"), _E, "fms-hf-tuning loads a causal LM (or a vision model "
        "by its own detection)"),
    Gap(("model", "architecture"), _W, "fms-hf-tuning loads the model's own config.json; "
        "model.architecture only feeds the memory estimate"),
    Gap(("model", "chat_template"), _E, "ftspec does not pass --chat_template "
        "(fms-hf-tuning reads the template text itself)", "leave the tokenizer's own"),
    Gap(("model", "tokenizer", "uri"), _E, _NO_FLAG.format("a tokenizer apart from the "
        "model in this form"), "keep the model's own tokenizer"),
    Gap(("model", "tokenizer", "special_tokens_uri"), _W, "special_tokens_uri is for "
        "torchtune's tokenizers"),
    Gap(("model", "tokenizer", "pad_token"), _W, "fms-hf-tuning adds its own pad token "
        "when the tokenizer has none"),
    Gap(("data", "train", "loader"), _W, "fms-hf-tuning picks the loader by the file's "
        "extension"),
    Gap(("data", "train", "split"), _W, "fms-hf-tuning trains on the whole file"),
    Gap(("data", "train", "subset"), _E, "fms-hf-tuning reads a file, not a hub config",
        "remove subset"),
    Gap(("data", "num_workers"), _W, _NO_FLAG.format("data loader workers in this form")),
    Gap(("data", "shuffle"), _W, "the Trainer shuffles the training rows"),
    Gap(("data", "packed_attention"), _W, "fms-hf-tuning's --packing packs with TRL's "
        "default strategy"),
    Gap(("method", "task_type"), _W, "fms-hf-tuning trains causal LMs"),
    Gap(("method", "lora", "modules_to_save"), _E, _NO_FLAG.format("modules_to_save")),
    Gap(("training", "early_stopping"), _E, "early stopping in fms-hf-tuning is a trainer "
        "controller file, which ftspec does not write"),
    Gap(("training", "activation_offloading"), _E, _NO_FLAG.format("activation offloading")),
    Gap(("training", "checkpointing", "resume_from"), _E, "fms-hf-tuning resumes from the "
        "output folder's last checkpoint only", "leave resume_from unset"),
    Gap(("training", "scheduler", "num_cycles"), _W, _NO_FLAG.format("the cosine cycles "
        "in this form")),
    Gap(("training", "optimizer", "momentum"), _W, _NO_FLAG.format("momentum in this form")),
    Gap(("training", "optimizer", "fused"), _W, "the seed's optimizer names pick the fused "
        "kernel (adamw_torch_fused) themselves"),
    Gap(("training", "max_steps_per_epoch"), _W, "the Trainer has no per-epoch step cap"),
    Gap(("training", "evaluation", "batch_size"), _W, _NO_FLAG.format("the evaluation "
        "batch in this form")),
    Gap(("output", "merge_adapter"), _E, "fms-hf-tuning saves the adapter; it does not "
        "merge it here", "merge after training"),
    Gap(("output", "push_to_hub"), _E, "fms-hf-tuning does not upload to the Hub",
        "upload the output folder afterwards"),
    Gap(("output", "save_adapter_only"), _E, "fms-hf-tuning saves the adapter only",
        "keep save_adapter_only: true"),
    Gap(("distributed", "ddp"), _W, "accelerate leaves DDP's settings at PyTorch's "
        "defaults"),
)
