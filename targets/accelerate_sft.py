"""TRL's SFT config (``sft.yaml``) for the accelerate launcher, and when TRL's CLI suffices.

``sft.yaml`` holds only keys of TRL's own ``trl sft`` argument classes (``ScriptArguments``,
``SFTConfig`` — itself ``transformers.TrainingArguments`` —, ``ModelConfig`` and
``DatasetMixtureConfig``), so ``trl sft --config sft.yaml`` and TRL's ``TrlParser`` read it.
Where TRL's CLI can express the spec the command is TRL's own script under ``accelerate
launch``; otherwise (``needs_preparation`` says why) ftspec's small entrypoint
``ftspec.runtime.hf_sft`` reads the same ``sft.yaml`` plus ``prepare.json`` (the
rows' rendering, a mixture by proportion, the PEFT method TRL's CLI lacks, early stopping)
and hands the prepared datasets to ``SFTTrainer``.
"""

from __future__ import annotations

import re
from typing import Any

from ftspec.spec.dtypes import TORCH_NAMES
from ftspec.spec.ir import Job
from ftspec.spec.model.method import ALL_LINEAR, IA3, PromptTuning
from ftspec.spec.model.training import Scheduler
from ftspec.spec.rows import TEXT_COLUMN
from ftspec.spec.urls import is_uri
from ftspec.targets.accelerate_data import is_chat, prepare_sources, trl_reads
from ftspec.targets.accelerate_ep import distributed_config, expert_parallel
from ftspec.targets.accelerate_stop import stop_entry
from ftspec.targets.chat_format import template_kind, torchtune_layout
from ftspec.targets.paths import RunPaths, default_paths, local_path

HF_OPTIMIZERS: dict[str, str] = {
    "adamw": "adamw_torch", "adam": "adam", "sgd": "sgd", "adafactor": "adafactor",
    "adamw_8bit": "adamw_bnb_8bit", "paged_adamw_8bit": "paged_adamw_8bit",
    "paged_adamw_32bit": "paged_adamw_32bit", "lion": "lion_32bit", "rmsprop": "rmsprop",
}
"""Spec optimizer -> Hugging Face ``optim`` name (adamw + fused -> adamw_torch_fused)."""


def hf_optim(job: Job) -> str:
    o = job.spec.training.optimizer
    name = HF_OPTIMIZERS[o.name]
    if name == "adamw_torch" and o.fused:
        return "adamw_torch_fused"
    return name


def needs_preparation(job: Job, p: RunPaths | None = None) -> list[str]:
    """Why TRL's own ``trl sft`` script cannot run this spec (empty: it can)."""
    spec = job.spec
    d = spec.data
    why: list[str] = []
    if d.mixture is not None:
        why.append("data.mixture: a mixture by proportion")
    elif d.train is not None and is_chat(d.train) and torchtune_layout(job):
        why.append("data.train: chat tokenized message by message, as torchtune does")
    elif d.train is not None and not trl_reads(d.train):
        why.append(f"data.train: format {d.train.format} rendered from the row's columns")
    if d.validation is not None or d.validation_split_ratio is not None:
        why.append("data.validation: held-out data prepared like the training rows")
    if peft_entry(job) is not None:
        why.append(f"method: {spec.method.kind} settings TRL's ModelConfig lacks")
    if spec.training.early_stopping is not None:
        why.append("training.early_stopping: a callback TRL's CLI does not add")
    if stop_entry(job) is not None:
        why.append("training.stop: a callback TRL's CLI does not add")
    from ftspec.targets.accelerate_trainable import why_prepared

    why += why_prepared(job)
    p = p or default_paths(job)
    if p.tokenizer is not None and tokenizer_dir(p.tokenizer) != p.model_id:
        why.append("model.tokenizer.uri: a tokenizer apart from the model")
    if template_kind(spec.model.chat_template) == "jinja":
        why.append("model.chat_template: an inline template (TRL's CLI takes a path)")
    if job.model.hf_layer_cls.startswith("GraniteMoe"):
        why.append("model: a Granite MoE config, whose expert count TRL's MoE loss reads "
                   "under another name (runtime/hf_sft/compat.py)")
    return why


def sft_config(job: Job, p: RunPaths) -> dict[str, Any]:
    """The ``sft.yaml`` mapping (run the target's ``check`` first)."""
    spec = job.spec
    t = spec.training
    cfg: dict[str, Any] = {"model_name_or_path": p.model_id}
    cfg.update(_model(job))
    if expert_parallel(job):  # from_pretrained shards the model: ep_size, fsdp_size
        cfg["model_init_kwargs"] = {"distributed_config": distributed_config(job)}
    cfg.update(_data(job, p))
    cfg.update({
        "max_length": job.max_seq_len,
        "per_device_train_batch_size": job.micro_batch_size,
        "gradient_accumulation_steps": job.gradient_accumulation_steps,
        "learning_rate": t.learning_rate,
        "weight_decay": t.optimizer.weight_decay,
    })
    if t.max_steps is not None:
        cfg["max_steps"] = t.max_steps
    else:
        cfg["num_train_epochs"] = t.epochs or 1
    cfg.update(_schedule(t.scheduler))
    if job.warmup_steps is not None:
        cfg["warmup_steps"] = job.warmup_steps
    elif t.scheduler.warmup_ratio is not None:
        cfg["warmup_steps"] = t.scheduler.warmup_ratio  # transformers: < 1 is a ratio
    cfg["optim"] = hf_optim(job)
    cfg.update(_optimizer(job))
    cfg["max_grad_norm"] = t.max_grad_norm if t.max_grad_norm is not None else 0.0
    if t.seed is not None:
        cfg["seed"] = t.seed
    cfg.update(_precision(job))
    from ftspec.targets.accelerate_config import uses_fsdp_checkpointing

    cfg["gradient_checkpointing"] = bool(t.gradient_checkpointing
                                         and not uses_fsdp_checkpointing(job))
    if t.activation_offloading:
        cfg["activation_offloading"] = True
    cfg.update(_peft(job))
    cfg.update(_eval(job))
    cfg.update(_save(job))
    cfg["output_dir"] = p.output_dir
    cfg["logging_steps"] = t.logging.steps
    cfg["logging_strategy"] = t.logging.strategy
    sinks = [r for r in t.logging.report_to if r != "jsonl"]
    if sinks:  # transformers 5 reports to nothing unless told
        cfg["report_to"] = sinks
    cfg.update(spec.overrides.training_args)
    return cfg


def _model(job: Job) -> dict[str, Any]:
    m = job.spec.model
    out: dict[str, Any] = {}
    if m.revision is not None:
        out["model_revision"] = m.revision
    if m.attn_implementation is not None:
        out["attn_implementation"] = m.attn_implementation
    if m.trust_remote_code:
        out["trust_remote_code"] = True
    if m.tokenizer.pad_token is not None:
        out["pad_token"] = m.tokenizer.pad_token
    if template_kind(m.chat_template) == "file":
        out["chat_template_path"] = m.chat_template  # a file or a tokenizer folder
    return out


def _data(job: Job, p: RunPaths) -> dict[str, Any]:
    d = job.spec.data
    out: dict[str, Any] = {"packing": d.packed}
    if d.num_workers:
        out["dataloader_num_workers"] = d.num_workers
    if not d.shuffle:
        out["train_sampling_strategy"] = "sequential"
    if d.packed:  # bfd: padding-free, no attention across examples; wrapped: causal over all
        out["packing_strategy"] = "bfd" if d.packed_attention == "per_example" else "wrapped"
    if needs_preparation(job, p) or d.train is None:
        sources = job.row_format.training
        from ftspec.targets.accelerate_tokens import torchtune_tokenized

        if torchtune_tokenized(job):
            out["completion_only_loss"] = True  # the rows' completion_mask: torchtune's mask
        elif any(s.format == "multimodal" for s in sources):  # prompt / completion messages
            out["completion_only_loss"] = sources[0].loss == "completion"
        elif all(s.loss == "all" for s in sources):
            out["completion_only_loss"] = False  # every token trained, BOS included
        chats = [s for s in sources if s.conversation]
        if chats and torchtune_layout(job) is None and chats[0].loss == "completion":
            out["assistant_only_loss"] = True  # messages rows: TRL masks by the template
        return out
    src = p.train
    if src.hub_name is not None:
        out["dataset_name"] = src.hub_name
        if d.train.subset is not None:
            out["dataset_config"] = d.train.subset
        out["dataset_train_split"] = d.train.split
    else:
        builder = "parquet" if (src.files or "").endswith(".parquet") else "json"
        out["datasets"] = [{"path": builder, "data_files": src.files or "",
                            "split": "train"}]
    rows = job.row_format.training[0]  # data.train's (no mixture here)
    if rows.format == "text" and rows.column_for("text") != TEXT_COLUMN:
        out["dataset_text_field"] = rows.column_for("text")
    if rows.format in ("completion", "prompt_completion"):
        out["completion_only_loss"] = rows.loss == "completion"
    if rows.format == "chat":  # loss on every assistant turn
        out["assistant_only_loss"] = rows.loss == "completion"
    return out


def _schedule(s: Scheduler) -> dict[str, Any]:
    """``lr_scheduler_type`` and its kwargs: a cosine with a floor is transformers'
    ``cosine_with_min_lr`` (``min_lr_rate``: the floor over the peak)."""
    kwargs: dict[str, Any] = {}
    if s.name in ("cosine", "cosine_with_restarts") and s.num_cycles != 0.5:
        kwargs["num_cycles"] = s.num_cycles
    name: str = s.name
    if s.name == "cosine" and s.min_lr_ratio > 0:
        name, kwargs["min_lr_rate"] = "cosine_with_min_lr", s.min_lr_ratio
    return {"lr_scheduler_type": name, **({"lr_scheduler_kwargs": kwargs} if kwargs else {})}


def _precision(job: Job) -> dict[str, Any]:
    """pure: weights load in ``dtype`` and no autocast runs (as torchtune's recipes train);
    mixed: fp32 weights (the master copy) and autocast to ``dtype`` (TRL's ``bf16``/``fp16``);
    autocast: weights load in ``dtype`` and autocast to it (``bf16`` over ``dtype: bfloat16``)."""
    spec = job.spec
    dtype = spec.model.dtype
    mixed = spec.model.autocasts
    load = "float32" if spec.model.precision_mode == "mixed" else TORCH_NAMES[dtype]
    q = spec.method.quantization
    if spec.method.kind == "qlora" and q is not None and q.bits == 4:
        load = TORCH_NAMES[q.compute_dtype]  # TRL: ModelConfig.dtype is bnb's compute dtype
    elif spec.method.kind == "gptq_lora" and q is not None:  # the GPTQ kernels' dtype; the
        load = TORCH_NAMES[q.compute_dtype]  # adapters PEFT keeps in fp32 are the master copy
    out = {"bf16": mixed and dtype == "bf16", "fp16": mixed and dtype == "fp16", "dtype": load}
    if mixed and job.device == "cpu":
        out["use_cpu"] = True  # TrainingArguments refuses bf16 autocast without a GPU unless told
    return out


def _optimizer(job: Job) -> dict[str, Any]:
    o = job.spec.training.optimizer
    out: dict[str, Any] = {}
    if o.betas != (0.9, 0.999):
        out.update(adam_beta1=o.betas[0], adam_beta2=o.betas[1])
    if o.eps != 1e-8:
        out["adam_epsilon"] = o.eps
    if o.momentum != 0.0:
        out["optim_args"] = f"momentum={o.momentum}"
    return out


def _eval(job: Job) -> dict[str, Any]:
    t = job.spec.training
    ev = t.evaluation
    if ev.strategy == "no":
        return {}
    out: dict[str, Any] = {"eval_strategy": ev.strategy}
    if ev.strategy == "steps":
        out["eval_steps"] = ev.steps or t.logging.steps
    out["per_device_eval_batch_size"] = ev.batch_size or job.micro_batch_size
    if t.early_stopping is not None:  # EarlyStoppingCallback needs the best-model tracking
        out.update(load_best_model_at_end=True, metric_for_best_model=t.early_stopping.metric,
                   greater_is_better=False)
    return out


def _save(job: Job) -> dict[str, Any]:
    t = job.spec.training
    c = t.checkpointing
    out: dict[str, Any] = {"save_strategy": c.strategy}
    if c.strategy == "steps":
        out["save_steps"] = c.steps or 500
    elif t.early_stopping is not None and t.evaluation.strategy == "steps":
        out["save_strategy"] = "steps"  # load_best_model_at_end: saves follow evaluations
        out["save_steps"] = t.evaluation.steps or t.logging.steps
    if c.total_limit is not None:
        out["save_total_limit"] = c.total_limit
    if expert_parallel(job) and out["save_strategy"] != "no":
        out["save_only_model"] = True  # the Trainer's condition for a model sharded at load
    if c.resume_from is not None:
        out["resume_from_checkpoint"] = (local_path(c.resume_from) if is_uri(c.resume_from)
                                         else c.resume_from)
    return out


ONE_MODULE = r"(.*\.)?{}"
"""One module name as the regular expression PEFT's name rule amounts to (the module itself
or any module whose path ends in ``.name``)."""


def trl_target_modules(modules: list[str]) -> list[str]:
    """``lora_target_modules`` as TRL's ``ModelConfig`` hands it to PEFT: TRL turns a
    one-item list into its item, a string, which PEFT full-matches as a regular expression
    against each module's whole path (``all-linear`` aside), so a lone name would match no
    module; it is written as the pattern that matches what the name means."""
    if len(modules) == 1 and modules[0] != ALL_LINEAR:
        return [ONE_MODULE.format(re.escape(modules[0]))]
    return modules


def _peft(job: Job) -> dict[str, Any]:
    m = job.spec.method
    if m.kind in ("full", "ia3", "prompt_tuning"):
        return {}  # ia3 / prompt tuning: prepare.json's peft entry
    lora = m.lora_settings
    modules = ([ALL_LINEAR] if list(lora.target_modules) == [ALL_LINEAR]  # PEFT finds them
               else list(job.lora_modules) + (["lm_head"] if lora.output else []))
    out: dict[str, Any] = {"use_peft": True, "lora_r": lora.rank, "lora_alpha": lora.alpha,
                           "lora_dropout": float(lora.dropout),
                           "lora_target_modules": trl_target_modules(modules)}
    if m.kind == "dora":
        out["use_dora"] = True
    if lora.modules_to_save:
        out["lora_modules_to_save"] = list(lora.modules_to_save)
    q = m.quantization
    if m.kind == "qlora" and q is not None:
        if q.bits == 8:
            out["load_in_8bit"] = True
            return out
        out.update(load_in_4bit=True, bnb_4bit_quant_type=q.quant_type,
                   use_bnb_nested_quant=q.double_quant,
                   bnb_4bit_quant_storage=TORCH_NAMES[q.storage_dtype])
    return out


def peft_entry(job: Job) -> dict[str, Any] | None:
    """prepare.json's ``peft``: what TRL's ``ModelConfig`` cannot say (None: nothing)."""
    m = job.spec.method
    lora = m.lora_settings
    if m.kind == "ia3":
        ia3 = m.ia3 or IA3()
        return {"kind": "ia3", "target_modules": list(ia3.target_modules),
                "feedforward_modules": list(ia3.feedforward_modules)}
    if m.kind == "prompt_tuning":
        pt = m.prompt_tuning or PromptTuning()
        return {"kind": "prompt_tuning", "num_virtual_tokens": pt.num_virtual_tokens,
                "init_text": pt.init_text if pt.init == "text" else None}
    if m.kind != "full" and (lora.bias != "none" or lora.init_weights != "default"):
        return {"kind": "lora_extra", "bias": lora.bias, "init_weights": lora.init_weights}
    return None


def prepare_plan(job: Job, p: RunPaths) -> dict[str, Any] | None:
    """prepare.json for ftspec's entrypoint, or None when ``trl sft`` runs the spec."""
    if not needs_preparation(job, p):
        return None
    spec = job.spec
    plan = prepare_sources(job, p.train)
    if p.tokenizer is not None:
        plan["tokenizer"] = tokenizer_dir(p.tokenizer)
    if spec.model.tokenizer.pad_token is not None:
        plan["pad_token"] = spec.model.tokenizer.pad_token
    if template_kind(spec.model.chat_template) == "jinja":
        plan["chat_template"] = spec.model.chat_template
    peft = peft_entry(job)
    if peft is not None:
        plan["peft"] = peft
    from ftspec.targets.accelerate_tokens import prepare_entry

    tokenizer = prepare_entry(job, p)
    if tokenizer is not None:
        plan["torchtune_tokenizer"] = tokenizer
    from ftspec.targets.accelerate_trainable import trainable_entry

    trainable = trainable_entry(job)
    if trainable is not None:
        plan["trainable"] = trainable
    es = spec.training.early_stopping
    if es is not None:
        plan["early_stopping"] = {"patience": es.patience, "threshold": es.threshold}
    stop = stop_entry(job)
    if stop is not None:
        plan["stop"] = stop
    return plan


TOKENIZER_FILES = (".model", ".json", ".txt", ".tiktoken")


def tokenizer_dir(path: str) -> str:
    """Hugging Face tokenizers load from a folder: a tokenizer file means its folder
    (torchtune takes the file itself, e.g. a sentencepiece ``tokenizer.model``)."""
    if path.endswith(TOKENIZER_FILES):
        return path.rsplit("/", 1)[0] if "/" in path else "."
    return path
