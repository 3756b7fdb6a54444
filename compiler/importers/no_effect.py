"""Source keys that change nothing that trains, per tool: the import lists them once, in a
note (``SpecDraft.no_effect``), apart from the warnings about what trains differently.

A key belongs here when the tool's own code uses it only for logging, evaluation, launching,
the output folder, preprocessing speed, or a kernel that computes the same values (Liger's
fused ones, axolotl's LoRA kernels, torch.compile); a key that changes which rows, which
tokens, which loss or which numbers train does not (it is mapped, warned with what trains
differently, or refused).
"""

from __future__ import annotations

COMMON = frozenset({
    "run_name", "wandb_name", "wandb_project", "wandb_entity", "wandb_watch", "wandb_log_model",
    "ddp_timeout", "ddp_find_unused_parameters", "preprocessing_num_workers",
    "dataset_num_proc", "gradient_checkpointing_kwargs", "overwrite_output_dir",
    "save_only_model", "log_level", "hub_model_id", "hub_strategy", "hub_always_push",
    "push_to_hub", "do_train", "remove_unused_columns", "use_liger_kernel",
    "enable_liger_kernel", "use_fast_tokenizer", "use_ray", "ray_num_workers",
})
"""Keys several tools share (transformers' TrainingArguments and the launch)."""

AXOLOTL = COMMON | {
    "model_type", "tokenizer_type", "strict", "dataset_prepared_path", "is_llama_derived_model",
    "is_mistral_derived_model", "is_qwen_derived_model", "is_falcon_derived_model",
    "eval_sample_packing", "eval_table_size", "eval_table_max_new_tokens",
    "liger_rope", "liger_rms_norm", "liger_glu_activation", "liger_layer_norm",
    "liger_fused_linear_cross_entropy", "lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel",
    "fused_attn_kernel", "torch_compile_mode", "flex_attn_compile_kwargs", "use_kernels",
    "experimental_skip_move_to_device", "activation_offloading", "plugins",
    "pad_to_sequence_len", "base_model_config", "tokenizer_use_mistral_common",
}
"""axolotl: model/tokenizer classes it infers anyway (``model_type: AutoModelForCausalLM``,
``tokenizer_type: AutoTokenizer``), config checking (``strict``), the prepared-data cache,
evaluation-only packing and tables, fused kernels and compilation (the same math), padding
every batch to the sequence length (padding is masked from the loss), its plugins (Liger,
cut cross-entropy: kernels for the same loss)."""

AXOLOTL_DATASET = frozenset({"ds_type", "name_or_path"})
"""axolotl ``datasets[]`` entries: the file type, which the loader finds from the files."""

LLAMAFACTORY = COMMON | {"plot_loss", "overwrite_cache", "pissa_convert", "dataset_dir"}
"""LLaMA-Factory: the loss plot, the preprocessing cache, PiSSA's conversion of the saved
adapter, the folder of dataset_info.json (the data keys say what is read)."""

OUMI = frozenset({
    ("training", "include_performance_metrics"), ("training", "ddp_find_unused_parameters"),
    ("training", "dataloader_prefetch_factor"), ("training", "empty_device_cache_steps"),
    ("training", "log_model_summary"), ("training", "run_name"),
    ("model", "enable_liger_kernel"), ("data", "train", "use_async_dataset"),
})
"""Oumi: metrics, logging, the loader's prefetch and cache-emptying cadence, Liger kernels."""

TRL = COMMON
"""TRL / fms-hf-tuning."""
