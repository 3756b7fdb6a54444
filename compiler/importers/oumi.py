"""``ftspec import oumi CONFIG [KEY=VALUE ...] [--job JOBCONFIG]``: an Oumi ``TrainingConfig``
as a spec (launcher accelerate: Oumi's SFT runs TRL's ``SFTTrainer`` under accelerate too).

Oumi itself cannot be installed next to ftspec's pins (see ``oumi_defaults``), so its own
loader is not used: the YAML is read as data (``oumi_source``) and every key Oumi leaves
implicit is written out from ``oumi_defaults`` (Oumi 0.9). The sections map as follows:
``model`` -> ``model`` (+ ``data.max_seq_len`` from ``model_max_length``), ``data`` ->
``data`` (``oumi_data``), ``peft`` -> ``method`` (``oumi_data``), ``training`` ->
``training`` / ``output``, ``fsdp`` -> ``distributed`` and a job config's ``resources`` /
``num_nodes`` -> ``resources`` (``oumi_job``). Every key without a spec field is a warning
at its line; a file that is not a TrainingConfig exits 1 with FILE:LINE:COL.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import Imported, SpecDraft
from ftspec.compiler.importers.model_source import put_model_facts, source_uri
from ftspec.compiler.importers.oumi_data import import_data, import_method
from ftspec.compiler.importers.oumi_defaults import TOOL
from ftspec.compiler.importers.oumi_job import import_distributed, import_resources
from ftspec.compiler.importers.oumi_source import OumiReader, load_oumi, override_args
from ftspec.compiler.importers.schedule import schedule
from ftspec.compiler.importers.trl import OPTIMIZERS
from ftspec.compiler.importers.trl_defaults import SFT_DEFAULTS
from ftspec.compiler.importers.trl_defaults import TOOL as TRL_TOOL
from ftspec.compiler.importers.trl_reader import hub_or_file_uri
from ftspec.spec.diagnostics import Diagnostic, Severity, SpecError
from ftspec.spec.dtypes import FROM_TORCH

DTYPES = {**FROM_TORCH, "bf16": "bf16", "f16": "fp16", "half": "fp16", "f32": "fp32",
          "float": "fp32"}
"""Oumi's ``torch_dtype_str`` spellings -> the spec's ``model.dtype``."""
ATTN = ("sdpa", "eager", "flash_attention_2")
SFT_TRAINERS = ("TRL_SFT", "HF", "OUMI")


def import_oumi(path: Path, args: tuple[str, ...] = (), job: Path | None = None,
                nproc: int | None = None, nnodes: int | None = None,
                accelerator: str = "nvidia-a100-80gb") -> Imported:
    from ftspec.compiler.importers.render import render

    args = override_args(args)
    draft = SpecDraft(load_oumi(path, args), args)
    r = OumiReader(draft)
    _header(draft, path)
    trainer = _trainer(r)
    _model(r, trainer)
    import_data(r)
    import_method(r)
    world = import_resources(draft, job, nproc, nnodes, accelerator)
    _training(r, world)
    import_distributed(r)
    _output(r)
    draft.put(("launcher",), "accelerate", "Oumi's SFT trainers run under accelerate")
    r.warn_unused()
    head = (f"Imported by `ftspec import oumi` from {path}"
            + (f" and {job}" if job else "") + f" ({TOOL}).",
            "Comments say where each value came from; Oumi's implicit defaults are written out.")
    return Imported("oumi", render(draft, head), draft.data, draft.diagnostics(),
                    draft, head)


def _header(draft: SpecDraft, path: Path) -> None:
    draft.put(("apiVersion",), "ftspec.dev/v1alpha1", "")
    draft.put(("kind",), "FineTune", "")
    generic = path.stem in ("train", "config") or path.stem.endswith("_train")
    stem = f"{path.parent.name}-{path.stem}" if generic else path.stem
    name = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")
    name = ("oumi-" + name if not name[:1].isalpha() else name)[:63].rstrip("-")
    draft.put(("metadata", "name"), name, f"the file name {path.name}")


def _trainer(r: OumiReader) -> str:
    trainer = str(r.value("training", "trainer_type")).upper()
    if trainer not in SFT_TRAINERS:
        span = r.draft.source.span_of(("training", "trainer_type"), key=True)
        raise SpecError([Diagnostic(
            Severity.ERROR, f"trainer_type {trainer}: ftspec trains supervised fine-tuning "
            "only (TRL_SFT, HF, OUMI)", path=("training", "trainer_type"), span=span,
            code="import.not-expressed")])
    if trainer != "TRL_SFT":
        r.warn("training", "trainer_type", f"trainer_type {trainer}: Oumi trains with "
               + ("transformers' Trainer" if trainer == "HF" else "its own loop")
               + " on its tokenized rows; imported as TRL's SFTTrainer (launcher accelerate)")
    return trainer


def _model(r: OumiReader, trainer: str) -> None:
    d = r.draft
    name = str(r.put(("model", "uri"), "model", "model_name",
                     convert=lambda v: source_uri(str(v), d)))
    put_model_facts(d, name, r.origin("model", "model_name"), ("model", "model_name"))
    r.put(("model", "revision"), "model", "model_revision")
    if r.value("model", "trust_remote_code") is True:
        r.put(("model", "trust_remote_code"), "model", "trust_remote_code")
    tok = r.value("model", "tokenizer_name")
    if isinstance(tok, str) and tok != r.section("model")["model_name"]:
        d.put(("model", "tokenizer", "uri"), hub_or_file_uri(tok),
              r.origin("model", "tokenizer_name"))
    r.put(("model", "tokenizer", "pad_token"), "model", "tokenizer_pad_token")
    attn = r.value("model", "attn_implementation")
    if attn in ATTN:
        r.put(("model", "attn_implementation"), "model", "attn_implementation")
    elif attn is not None:
        r.warn("model", "attn_implementation", f"attn_implementation {attn!r} has no spec "
               "value (sdpa, eager, flash_attention_2)")
    if r.has("model", "chat_template"):
        r.warn("model", "chat_template", "chat_template names one of Oumi's built-in "
               "templates: not imported (the tokenizer's own template is used)")
    if r.value("model", "load_pretrained_weights") is False:
        r.warn("model", "load_pretrained_weights", "load_pretrained_weights false (random "
               "initial weights) has no spec field: the pretrained weights are loaded")
    _precision(r)
    _max_seq_len(r, trainer, d.get(("model", "family")))


def _precision(r: OumiReader) -> None:
    """``torch_dtype_str`` is what the weights load in; ``mixed_precision_dtype`` autocasts
    over them (Oumi's TrainingConfig refuses other weights then): mixed. Without it Oumi
    trains pure (``to_hf`` sets transformers' bf16 / fp16 from it alone), so Oumi never
    autocasts over 16-bit weights: the spec's autocast mode has no Oumi source."""
    mixed = str(r.value("training", "mixed_precision_dtype")).upper()
    dtype_str = str(r.value("model", "torch_dtype_str")).lower()
    at = r.origin("model", "torch_dtype_str")
    if mixed in ("BF16", "FP16"):
        r.put(("model", "dtype"), "training", "mixed_precision_dtype",
              convert=lambda _: mixed.lower())
        if mixed == "BF16":  # fp16's default is mixed
            r.draft.put(("model", "precision"), "mixed",
                        r.origin("training", "mixed_precision_dtype"))
        if DTYPES.get(dtype_str) not in ("fp32", None) and dtype_str != "auto":
            r.warn("model", "torch_dtype_str", "Oumi refuses mixed_precision_dtype over "
                   f"{dtype_str} weights (\"Model must be loaded in fp32 to enable mixed "
                   "precision training.\"); imported as the mixed precision it accepts "
                   "(float32 weights)")
        return
    if dtype_str == "auto":
        r.draft.put(("model", "dtype"), "bf16", f"{at}: the checkpoint's own dtype (bf16 "
                    "assumed)")
        r.draft.put(("model", "precision"), "pure", f"{at}, without mixed_precision_dtype")
        r.warn("model", "torch_dtype_str", "torch_dtype_str auto loads the checkpoint's own "
               "dtype: imported as bf16; set model.dtype if the model is stored otherwise")
        return
    if dtype_str not in DTYPES:
        r.warn("model", "torch_dtype_str", f"torch_dtype_str {dtype_str} has no spec dtype")
        return
    r.put(("model", "dtype"), "model", "torch_dtype_str", convert=lambda v: DTYPES[str(v)])
    if DTYPES[dtype_str] == "fp16":
        r.warn("model", "torch_dtype_str", "Oumi would train fp16 weights without mixed "
               "precision, which does not train stably; imported as mixed fp16")
        return
    r.draft.put(("model", "precision"), "pure", f"{at}, without mixed_precision_dtype")


def _max_seq_len(r: OumiReader, trainer: str, family: str | None) -> None:
    if r.put(("data", "max_seq_len"), "model", "model_max_length", convert=int) is not None:
        if trainer != "TRL_SFT":
            r.warn("model", "model_max_length", f"Oumi passes model_max_length to TRL's "
                   f"trainers only; with {trainer} it caps the tokenizer's length")
        return
    if trainer == "TRL_SFT":
        r.draft.put(("data", "max_seq_len"), SFT_DEFAULTS["max_length"],
                    f"{TRL_TOOL} default (max_length; model.model_max_length unset)")
        return
    from ftspec.spec.catalog.models import MODEL_FAMILIES

    if family is not None:
        r.draft.put(("data", "max_seq_len"), MODEL_FAMILIES[family].max_seq_len,
                    "model.model_max_length unset: the tokenizer's limit (the model's "
                    "context, from the catalog)")


def _training(r: OumiReader, world: int) -> None:
    d, t = r.draft, ("training",)
    steps = r.value("training", "max_steps")
    if isinstance(steps, int) and steps > 0:
        r.put(t + ("max_steps",), "training", "max_steps")
        d.put(t + ("epochs",), None, f"{r.origin('training', 'max_steps')}: max_steps "
              "overrides epochs")
        r.used.add(("training", "num_train_epochs"))
    else:
        r.put(t + ("epochs",), "training", "num_train_epochs", convert=int)
    mbs = r.put(t + ("micro_batch_size",), "training", "per_device_train_batch_size")
    ga = r.put(t + ("gradient_accumulation_steps",), "training", "gradient_accumulation_steps")
    d.put(t + ("global_batch_size",), mbs * ga * world,
          f"per_device_train_batch_size x gradient_accumulation_steps x {world} processes")
    r.put(t + ("learning_rate",), "training", "learning_rate", convert=float)
    _optimizer(r)
    _scheduler(r)
    grad_norm = r.value("training", "max_grad_norm")
    d.put(t + ("max_grad_norm",), None if not grad_norm else float(grad_norm),
          r.origin("training", "max_grad_norm") + (" (null: no clipping)" if not grad_norm
                                                   else ""))
    r.put(t + ("seed",), "training", "seed")
    r.put(t + ("gradient_checkpointing",), "training", "enable_gradient_checkpointing")
    r.put(t + ("compile",), "training", "compile")
    r.put(t + ("logging", "strategy"), "training", "logging_strategy")
    r.put(t + ("logging", "steps"), "training", "logging_steps", convert=int)
    sinks = [s for s, key in (("wandb", "enable_wandb"), ("tensorboard", "enable_tensorboard"),
                              ("mlflow", "enable_mlflow")) if r.value("training", key)]
    d.put(t + ("logging", "report_to"), sinks, "; ".join(
        r.origin("training", k) for k in ("enable_wandb", "enable_tensorboard", "enable_mlflow")))
    _evaluation(r)
    _checkpointing(r)
    _raw_training_args(r)


def _optimizer(r: OumiReader) -> None:
    d, opt = r.draft, ("training", "optimizer")
    name = str(r.value("training", "optimizer"))
    if name in OPTIMIZERS:
        spec_name, fused = OPTIMIZERS[name]
        d.put(opt + ("name",), spec_name, r.origin("training", "optimizer"))
        d.put(opt + ("fused",), fused, r.origin("training", "optimizer"))
    else:
        r.warn("training", "optimizer", f"optimizer {name} has no spec optimizer: adamw used")
    r.put(opt + ("weight_decay",), "training", "weight_decay", convert=float)
    b1, b2 = r.value("training", "adam_beta1"), r.value("training", "adam_beta2")
    d.put(opt + ("betas",), [float(b1), float(b2)],
          f"{r.origin('training', 'adam_beta1')}; {r.origin('training', 'adam_beta2')}")
    r.put(opt + ("eps",), "training", "adam_epsilon", convert=float)
    if name == "sgd" or r.has("training", "sgd_momentum"):
        r.put(opt + ("momentum",), "training", "sgd_momentum", convert=float)


def _scheduler(r: OumiReader) -> None:
    d, sched = r.draft, ("training", "scheduler")
    name = str(r.value("training", "lr_scheduler_type"))
    kwargs = r.value("training", "lr_scheduler_kwargs")
    found = schedule(name, kwargs, float(r.value("training", "learning_rate")))
    at = r.origin("training", "lr_scheduler_type")
    if found.name is None:
        r.warn("training", "lr_scheduler_type", f"lr_scheduler_type {found.problem}: the "
               "spec's default (cosine, decaying to zero) is used")
    else:
        d.put(sched + ("name",), found.name, at if found.name == name else f"{at} ({name})")
        for key, value in found.fields.items():
            d.put(sched + (key,), value, r.origin("training", "lr_scheduler_kwargs"))
        if found.unread:
            r.warn("training", "lr_scheduler_kwargs", f"lr_scheduler_kwargs "
                   f"{', '.join(found.unread)} (for {name}) have no spec field: not imported")
    steps, ratio = r.value("training", "warmup_steps"), r.value("training", "warmup_ratio")
    if steps is not None:  # Oumi: warmup_steps wins over warmup_ratio
        r.put(sched + ("warmup_steps",), "training", "warmup_steps", convert=int)
        if ratio is not None:
            r.warn("training", "warmup_ratio", "warmup_ratio is ignored: warmup_steps is set")
    elif ratio is not None:
        r.put(sched + ("warmup_ratio",), "training", "warmup_ratio", convert=float)
    else:
        d.put(sched + ("warmup_steps",), 0, f"{TOOL} default (no warmup_steps or "
              "warmup_ratio: 0)")


def _evaluation(r: OumiReader) -> None:
    ev = ("training", "evaluation")
    strategy = str(r.value("training", "eval_strategy"))
    if strategy != "no" and r.draft.get(("data", "validation")) is None:
        # oumi/train.py builds no eval dataset without data.validation, and transformers'
        # Trainer refuses an eval_strategy other than "no" without one
        r.draft.put(ev + ("strategy",), "no", f"{r.origin('training', 'eval_strategy')} "
                    "(no validation data)")
        r.warn("training", "eval_strategy", f"eval_strategy {strategy} without "
               "data.validation: Oumi passes no eval dataset and transformers' Trainer "
               "refuses to start so; imported with evaluation off (add data.validation and "
               f"set training.evaluation.strategy: {strategy} to evaluate)")
        r.value("training", "eval_steps")
        r.value("training", "per_device_eval_batch_size")
        return
    r.put(ev + ("strategy",), "training", "eval_strategy")
    if strategy == "steps":
        r.put(ev + ("steps",), "training", "eval_steps", convert=int)
    if strategy != "no":
        r.put(ev + ("batch_size",), "training", "per_device_eval_batch_size")


def _checkpointing(r: OumiReader) -> None:
    ck = ("training", "checkpointing")
    steps, epoch = r.value("training", "save_steps"), r.value("training", "save_epoch")
    if isinstance(steps, int) and steps > 0:  # TrainingParams.to_hf: steps win
        r.draft.put(ck + ("strategy",), "steps", r.origin("training", "save_steps"))
        r.put(ck + ("steps",), "training", "save_steps")
        if epoch:
            r.warn("training", "save_epoch", "save_epoch is ignored: save_steps > 0 saves "
                   "by steps")
    else:
        r.draft.put(ck + ("strategy",), "epoch" if epoch else "no",
                    f"{r.origin('training', 'save_epoch')}; save_steps {steps}")
    r.put(ck + ("resume_from",), "training", "resume_from_checkpoint")
    if r.value("training", "save_final_model") is False:
        r.warn("training", "save_final_model", "save_final_model false: the final model "
               "is saved all the same")


def _raw_training_args(r: OumiReader) -> None:
    """``trainer_kwargs`` and ``gradient_checkpointing_kwargs`` go to the trainer as they are."""
    raw: dict[str, Any] = {}
    kwargs = r.value("training", "trainer_kwargs")
    if isinstance(kwargs, dict) and kwargs:
        raw.update(kwargs)
        r.warn("training", "trainer_kwargs", "trainer_kwargs kept raw in "
               "overrides.training_args (the accelerate launcher's TRL config only)")
    gc = r.value("training", "gradient_checkpointing_kwargs")
    if isinstance(gc, dict) and gc and gc != {"use_reentrant": False}:  # transformers 5: default
        raw["gradient_checkpointing_kwargs"] = gc
        r.warn("training", "gradient_checkpointing_kwargs", "gradient_checkpointing_kwargs "
               "kept raw in overrides.training_args (the accelerate launcher's TRL config "
               "only)")
    if raw:
        at = r.origin("training", "trainer_kwargs" if kwargs else
                      "gradient_checkpointing_kwargs")
        r.draft.put(("overrides", "training_args"), raw, at)
    workers = r.value("training", "dataloader_num_workers")
    if isinstance(workers, int):
        r.put(("data", "num_workers"), "training", "dataloader_num_workers")
    else:
        r.warn("training", "dataloader_num_workers", f"dataloader_num_workers {workers!r}: "
               "Oumi picks the count from the CPUs; the spec's default (0) is used")


def _output(r: OumiReader) -> None:
    out = str(r.value("training", "output_dir"))
    r.draft.put(("output", "uri"), hub_or_file_uri(out) if out.startswith("/") else
                "file://" + out, r.origin("training", "output_dir"))
    if r.draft.data["method"]["kind"] != "full":
        mode = str(r.value("peft", "peft_save_mode")).upper()
        r.draft.put(("output", "save_adapter_only"), mode == "ADAPTER_ONLY",
                    r.origin("peft", "peft_save_mode"))
        if mode != "ADAPTER_ONLY":
            r.warn("peft", "peft_save_mode", f"peft_save_mode {mode}: the spec saves the "
                   "adapter only or the whole model; imported as the whole model")
