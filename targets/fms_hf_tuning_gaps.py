"""The fms_hf_tuning launcher's field contract: spec fields ``tuning.sft_trainer``'s command
line (as the SFTTrainer actuator writes it) does not carry."""

from __future__ import annotations

from ftspec.spec.ir import Job
from ftspec.targets.accelerate_gaps import _fsdp_version
from ftspec.targets.gap import ERROR as _E
from ftspec.targets.gap import WARNING as _W
from ftspec.targets.gap import Gap

_NO_FLAG = "fms-hf-tuning's command line has no flag for {}"
_ROWS = ("fms-hf-tuning's command line names a text or chat column; rendering rows from "
         "other columns needs its data_config file, which ftspec does not write")
_RENDERING = ("column_map", "prompt_template", "completion_template", "prompt_func",
              "completion_func", "new_system_prompt")
_VALIDATION = ("fms-hf-tuning reads --validation_data_path like the training file; {} of "
               "the validation data does not reach it")


def _fsdp2(job: Job) -> bool:
    return _fsdp_version(job) == 2


def _other_attention(job: Job) -> bool:
    return job.spec.model.attn_implementation not in (None, "flash_attention_2")

GAPS: tuple[Gap, ...] = (
    *(Gap(("data", "train", key), _E, _ROWS, "use launcher: accelerate") for key in _RENDERING),
    *(Gap(("data", "validation", key), _E, _ROWS, "use launcher: accelerate")
      for key in _RENDERING),
    *(Gap(("data", "validation", key), _W, _VALIDATION.format(key))
      for key in ("format", "loader", "split", "subset", "proportion", "response_template",
                  "train_on_input")),
    Gap(("data", "train", "train_on_input"), _W, "text rows train on every token unless "
        "response_template is set (then on the response only); train_on_input does not reach "
        "fms-hf-tuning"),
    Gap(("data", "validation_split_ratio"), _E, _NO_FLAG.format("a held-out split"),
        "give data.validation as a file"),
    Gap(("distributed", "fsdp", "backward_prefetch"), _W, "FSDP2 has no backward prefetch "
        "setting", when=_fsdp2),
    Gap(("distributed", "fsdp", "forward_prefetch"), _W, "FSDP2 has no forward prefetch "
        "setting", when=_fsdp2),
    Gap(("distributed", "fsdp", "use_orig_params"), _W, "FSDP2 always keeps the original "
        "parameters", when=_fsdp2),
    Gap(("distributed", "fsdp", "sync_module_states"), _W, "accelerate syncs module states "
        "whenever cpu_ram_efficient_loading is on",
        when=lambda job: job.spec.distributed.fsdp is not None
        and job.spec.distributed.fsdp.cpu_ram_efficient_loading),
    Gap(("method", "lora", "init_weights"), _E, "fms-hf-tuning's --init_lora_weights is "
        "true or false (PEFT's default or zeros), not a named initialization"),
    Gap(("model", "attn_implementation"), _W, "fms-hf-tuning's only attention flag is "
        "--use_flash_attn; other implementations are transformers' default (sdpa)",
        when=_other_attention),
    Gap(("training", "loss"), _W, "the Trainer computes the plain cross-entropy "
        "(chunked_cross_entropy is torchtune's)"),
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
    Gap(("training", "scheduler", "min_lr_ratio"), _E, _NO_FLAG.format("the cosine "
        "schedule's floor in this form")),
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
    *(Gap(("training", "stop", key), _E, "tuning.sft_trainer stops by epochs and "
          "max_steps only: the SFTTrainer actuator's stop rules run around it, and ftspec "
          "adds no callback to fms-hf-tuning", "use launcher: accelerate (its entrypoint "
          "stops by the clock), or bound the run with training.max_steps")
      for key in ("after_seconds", "method", "warmup_seconds", "stable_seconds",
                  "stable_steps")),
    Gap(("method", "lora", "loraplus_lr_ratio"), _E, _NO_FLAG.format("LoRA+"),
        "use launcher: accelerate (PEFT's LoRA+ optimizer)"),
    Gap(("method", "lora", "loraplus_lr_embedding"), _E, _NO_FLAG.format("LoRA+"),
        "use launcher: accelerate"),
    Gap(("method", "unfrozen_parameters"), _E, _NO_FLAG.format("freezing patterns"),
        "use launcher: accelerate"),
)


ACTUATOR_DIFFERENCES: dict[str, str] = {
    "logging_strategy": (
        "the actuator passes none, so fms-hf-tuning's default (epoch) logs one record per "
        "epoch: its figures come from its own metrics callback. ftspec passes the spec's "
        "training.logging.strategy (steps by default): `ftspec status`, `apply --wait` and "
        "the compare table read the trainer's per-step records (reconciler/progress.py: "
        "step, loss, learning rate, ETA), which a one-epoch run logged per epoch prints "
        "once, at the end. The trained weights are the same"),
    "log_level": (
        "the seed's command-line text shows debug; the actuator's code passes info (its "
        "wrapper's hard-coded arguments), and so does ftspec. Nothing ftspec reads depends "
        "on the level: the trainer prints its records at any level"),
}
"""Flags where the fms_hf_tuning launcher's command line differs on purpose from the one
the SFTTrainer actuator runs for the same point, and why (all logging: nothing that trains).
``tests/targets/test_sfttrainer_actuator_argv.py`` compares each seed example's command line
with the actuator's and sets aside only these flags and the paths."""
