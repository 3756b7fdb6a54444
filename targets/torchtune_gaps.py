"""The torchtune launcher's field contract: spec fields torchtune 0.6.1 cannot express."""

from __future__ import annotations

from ftspec.spec.ir import Job
from ftspec.targets.gap import ERROR as _E
from ftspec.targets.gap import WARNING as _W
from ftspec.targets.gap import Gap

_STOP_KEYS = ("after_seconds", "method", "warmup_seconds", "stable_seconds", "stable_steps")
_TT_STOP = ("torchtune 0.6.1's recipes have no callback and no hook between optimizer steps: "
            "their loop ends by epochs and max_steps_per_epoch only, so nothing can ask it to "
            "stop by the clock (and Kubeflow's torchtune runtimes run `tune run` as it is)")
_FSDP_KNOB = "torchtune's recipes shard every decoder layer with FSDP2 and expose no {}"
_HF_ONLY = "torchtune builds the model from its own builders; {} is a Hugging Face setting"


def _jinja_template(job: Job) -> bool:
    from ftspec.targets.chat_format import template_kind

    return template_kind(job.spec.model.chat_template) in ("jinja", "file")


GAPS: tuple[Gap, ...] = (
    *(Gap(("training", "stop", key), _E, _TT_STOP, "use launcher: accelerate (its "
          "entrypoint stops by the clock), or bound the run with training.max_steps / "
          "max_steps_per_epoch") for key in _STOP_KEYS),
    Gap(("distributed", "expert_parallel"), _E, "torchtune 0.6.1 has no expert "
        "parallelism, nor any mixture-of-experts model (the memory estimate in `explain` "
        "shows what it would save)", "use launcher: accelerate (transformers' expert "
        "parallelism)"),
    Gap(("training", "scheduler", "min_lr_ratio"), _E, "torchtune 0.6.1's cosine schedule "
        "(get_cosine_schedule_with_warmup) decays to zero; it has no floor",
        "use launcher: accelerate (transformers' cosine_with_min_lr), or remove min_lr_ratio"),
    Gap(("model", "revision"), _E, "the torchtune target reads the model files the "
        "download step fetched; it cannot pin a revision",
        "pin the revision in the download (hf://org/repo@rev is not read either), or "
        "use launcher: accelerate"),
    Gap(("model", "auto_class"), _E, _HF_ONLY.format("auto_class"),
        "torchtune trains causal LMs only"),
    Gap(("method", "task_type"), _E, "torchtune trains causal LMs only"),
    Gap(("model", "chat_template"), _E, "torchtune 0.6.1 formats chats with its "
        "tokenizer's prompt template classes; a Jinja chat template is not read",
        "set model.chat_template to llama2, mistral or chatml (torchtune's templates) "
        "only where it lays out the same tokens as the Jinja template, or use launcher: "
        "accelerate", when=_jinja_template),
    Gap(("model", "device_map"), _W, _HF_ONLY.format("device_map")),
    Gap(("model", "trust_remote_code"), _W, _HF_ONLY.format("trust_remote_code")),
    Gap(("model", "use_cache"), _W, _HF_ONLY.format("use_cache")),
    Gap(("model", "tokenizer", "pad_token"), _W, "torchtune's tokenizers have a fixed "
        "pad id; pad_token is ignored"),
    Gap(("method", "quantization", "compute_dtype"), _E, "torchtune's QLoRA quantizes "
        "to NF4 and computes in the model dtype"),
    Gap(("method", "quantization", "double_quant"), _E, "torchtune's NF4 has no "
        "double-quantization switch"),
    Gap(("method", "quantization", "quant_type"), _E, "torchtune's QLoRA is NF4 only"),
    Gap(("method", "quantization", "storage_dtype"), _E, "torchtune's NF4 tensors "
        "have a fixed storage type"),
    Gap(("method", "quantization", "bits"), _E, "torchtune's QLoRA is 4-bit only"),
    Gap(("method", "lora", "loraplus_lr_ratio"), _E, "torchtune's LoRA recipes build "
        "one optimizer group at one learning rate: LoRA+ has no setting there",
        "use launcher: accelerate (PEFT's LoRA+ optimizer)"),
    Gap(("method", "lora", "loraplus_lr_embedding"), _E, "torchtune's LoRA recipes "
        "have no LoRA+", "use launcher: accelerate"),
    Gap(("method", "unfrozen_parameters"), _E, "torchtune's recipes train every "
        "parameter of the method (all of them for full, the adapters for LoRA): they "
        "have no freezing patterns", "use launcher: accelerate"),
    Gap(("data", "num_workers"), _W, "torchtune 0.6.1's recipes build their data "
        "loader without worker processes"),
    Gap(("training", "checkpointing", "strategy"), _E, "torchtune saves a checkpoint "
        "at the end of every epoch, and only then", "use strategy: epoch",
        when=lambda job: job.spec.training.checkpointing.strategy != "epoch"),
    Gap(("training", "checkpointing", "total_limit"), _W, "torchtune keeps every "
        "epoch's checkpoint"),
    Gap(("training", "logging", "strategy"), _W, "torchtune logs every "
        "training.logging.steps steps"),
    Gap(("output", "push_to_hub"), _E, "torchtune does not upload to the Hub",
        "upload the output folder afterwards, or use launcher: accelerate"),
    Gap(("distributed", "fsdp", "auto_wrap"), _W, _FSDP_KNOB.format("auto_wrap")),
    Gap(("distributed", "fsdp", "min_num_params"), _W,
        _FSDP_KNOB.format("size-based wrapping")),
    Gap(("distributed", "fsdp", "transformer_layer_cls"), _W,
        _FSDP_KNOB.format("choice of wrapped class")),
    Gap(("distributed", "fsdp", "backward_prefetch"), _W, _FSDP_KNOB.format("prefetch")),
    Gap(("distributed", "fsdp", "forward_prefetch"), _W, _FSDP_KNOB.format("prefetch")),
    Gap(("distributed", "fsdp", "sync_module_states"), _W,
        _FSDP_KNOB.format("sync_module_states")),
    Gap(("distributed", "fsdp", "use_orig_params"), _W,
        _FSDP_KNOB.format("use_orig_params (FSDP1 only)")),
    Gap(("distributed", "fsdp", "cpu_ram_efficient_loading"), _W,
        _FSDP_KNOB.format("loading switch (rank 0 loads and broadcasts)")),
    Gap(("distributed", "fsdp", "state_dict_type"), _W, "torchtune gathers a full "
        "state dict for its checkpoints"),
)
