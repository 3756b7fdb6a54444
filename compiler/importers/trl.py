"""``ftspec import trl CONFIG``: a ``trl sft --config`` YAML as a spec (launcher accelerate).

The file is one flat mapping of ``ScriptArguments``, ``SFTConfig`` (with transformers'
``TrainingArguments``) and ``ModelConfig`` keys, as TRL's own parser reads it. Keys TRL
leaves implicit are written out from ``trl_defaults`` (the TRL version is named there).
The alignment-handbook's data keys (``dataset_mixture``; the older ``dataset_mixer``,
``dataset_splits``, ``dataset_configs``) are read too (``trl_mixture``), because its recipes
are the most common TRL SFT configs.
Every key without a spec field becomes a warning at its line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ftspec.compiler.importers.base import (
    Imported,
    SpecDraft,
    not_this_tool,
    unsupported,
)
from ftspec.compiler.importers.deepspeed_names import put_deepspeed
from ftspec.compiler.importers.model_source import put_model_facts, source_uri
from ftspec.compiler.importers.prequantized import prequantized, put_prequantized
from ftspec.compiler.importers.schedule import schedule
from ftspec.compiler.importers.topology import resources_from_flags
from ftspec.compiler.importers.trainable import put_int8, put_target_modules
from ftspec.compiler.importers.trainer_fsdp import TRANSFORMERS_5, put_trainer_fsdp
from ftspec.compiler.importers.trl_data import import_data
from ftspec.compiler.importers.trl_defaults import (
    FMS_PT_DEFAULTS,
    LEGACY_KEYS,
    LEGACY_READERS,
    NO_EFFECT,
    TOOL,
)
from ftspec.compiler.importers.trl_precision import import_precision, peft_on
from ftspec.compiler.importers.trl_reader import Reader, hub_or_file_uri
from ftspec.spec.dtypes import STORAGE_FROM_TORCH
from ftspec.spec.loader import SourceDoc, load_spec_file

OPTIMIZERS: dict[str, tuple[str, bool]] = {
    "adamw_torch": ("adamw", False), "adamw_torch_fused": ("adamw", True),
    "adamw_hf": ("adamw", False), "adam": ("adam", False), "sgd": ("sgd", False),
    "adafactor": ("adafactor", False), "adamw_bnb_8bit": ("adamw_8bit", False),
    "adamw_8bit": ("adamw_8bit", False), "paged_adamw_8bit": ("paged_adamw_8bit", False),
    "paged_adamw_32bit": ("paged_adamw_32bit", False), "lion_32bit": ("lion", False),
    "rmsprop": ("rmsprop", False),
}
"""transformers ``optim`` -> (spec optimizer, fused)."""
SINKS = ("tensorboard", "wandb", "mlflow")
ATTN = {"sdpa", "eager", "flash_attention_2"}


def import_trl(path: Path, nproc: int | None = None, nnodes: int | None = None,
               accelerator: str = "nvidia-a100-80gb") -> Imported:
    from ftspec.compiler.importers.flat import finish

    doc = load_spec_file(path)
    check_is_trl(doc)
    draft = SpecDraft(doc)
    r = Reader(draft)
    _header(draft, path)
    _model(r)
    import_data(r)
    _method(r)
    world = _resources(draft, nproc, nnodes, accelerator)
    _training(r, world)
    put_trainer_fsdp(r, TRANSFORMERS_5)
    if r.has("deepspeed"):
        put_deepspeed(draft, ("deepspeed",), r.value("deepspeed"), {}, "TRL")
    _output(r)
    if not r.fms:  # fms-hf-tuning's own arguments keep these names
        _legacy_names(r)
    return finish("trl", r, path, "TRL's SFTTrainer runs under accelerate launch", NO_EFFECT)


def _legacy_names(r: Reader) -> None:
    """A key older releases read under another name: read as they did, said at the key (the
    installed TRL's parser refuses the old name)."""
    for old, new in LEGACY_KEYS.items():
        if old in r.used:
            r.draft.warn((old,), f"{old} is the name {LEGACY_READERS[old]} read for {new}; "
                         f"{TOOL}'s parser refuses it: read as {new} {r.data[old]!r}, as those "
                         "releases did")


def check_is_trl(doc: SourceDoc) -> None:
    if not isinstance(doc.data, dict):
        raise not_this_tool(doc, (), "not a TRL config: the document is not a mapping",
                            "give the YAML file `trl sft --config` reads")
    if "model_name_or_path" not in doc.data:
        first = next(iter(doc.data), None)
        raise not_this_tool(doc, (first,) if first is not None else (),
                            "not a TRL SFT config: no model_name_or_path key",
                            "TRL's ModelConfig names the model with model_name_or_path")


def _header(draft: SpecDraft, path: Path) -> None:
    draft.put(("apiVersion",), "ftspec.dev/v1alpha1", "")
    draft.put(("kind",), "FineTune", "")
    stem = f"{path.parent.name}-{path.stem}" if path.stem in ("config", "sft") else path.stem
    name = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")
    name = ("trl-" + name if not name[:1].isalpha() else name)[:63].rstrip("-")
    draft.put(("metadata", "name"), name, f"the file name {path.name}")


def _model(r: Reader) -> None:
    name = str(r.put(("model", "uri"), "model_name_or_path",
                     convert=lambda v: source_uri(str(v), r.draft)))
    put_model_facts(r.draft, name, r.origin("model_name_or_path"), ("model_name_or_path",))
    if not r.fms:
        r.put(("model", "revision"), "model_revision", r.model)
    attn = r.value("attn_implementation")
    if attn in ATTN:
        r.draft.put(("model", "attn_implementation"), attn, r.origin("attn_implementation"))
    elif attn is not None:
        r.draft.warn((r.key("attn_implementation") or "",), f"attn_implementation {attn!r} "
                     "has no spec value (sdpa, eager, flash_attention_2)")
    if r.fms and r.value("use_flash_attn", r.model) is not None:
        flash = r.value("use_flash_attn", r.model) is True
        r.draft.put(("model", "attn_implementation"), "flash_attention_2" if flash else "sdpa",
                    r.origin("use_flash_attn"))
    if r.value("use_flash_attention_2") is True:
        r.draft.put(("model", "attn_implementation"), "flash_attention_2",
                    r.origin("use_flash_attention_2"))
    if r.value("trust_remote_code") is True:
        r.put(("model", "trust_remote_code"), "trust_remote_code")
    tok = r.value("tokenizer_name_or_path")
    if isinstance(tok, str) and tok != r.data["model_name_or_path"]:
        r.draft.put(("model", "tokenizer", "uri"), hub_or_file_uri(tok), r.origin("tokenizer_name_or_path"))
    r.put(("model", "chat_template"), "chat_template")
    import_precision(r)


def _prompt_tuning(r: Reader) -> None:
    """fms-hf-tuning's ``peft_method: pt``: PEFT prompt tuning, its defaults written out."""
    d, pt = r.draft, ("method", "prompt_tuning")
    d.put(("method", "kind"), "prompt_tuning", r.origin("peft_method"))
    r.put(pt + ("num_virtual_tokens",), "num_virtual_tokens", FMS_PT_DEFAULTS)
    init = str(r.value("prompt_tuning_init", FMS_PT_DEFAULTS)).lower()
    if init not in ("text", "random"):
        raise unsupported(d.source, ("prompt_tuning_init",), f"prompt_tuning_init {init}: "
                          "the spec initialises the prompt from text or at random",
                          "use TEXT or RANDOM")
    d.put(pt + ("init",), init, r.origin("prompt_tuning_init"))
    if init == "text":
        r.put(pt + ("init_text",), "prompt_tuning_init_text", FMS_PT_DEFAULTS)
    else:
        r.value("prompt_tuning_init_text")


def _prequantized(r: Reader) -> None:
    """A pre-quantized checkpoint by its name (``-GPTQ``, ``-AWQ``, ``-bnb-4bit``, ...)."""
    key = r.key("model_name_or_path")
    found = prequantized(str(r.value("model_name_or_path"))) if key else None
    if key is not None and found is not None:
        put_prequantized(r.draft, found, (key,), tuple(
            (k,) for k in ("load_in_4bit", "load_in_8bit") if r.value(k) is True))


def _method(r: Reader) -> None:
    d = r.draft
    if r.fms:
        method = r.value("peft_method")
        if method == "pt":
            _prompt_tuning(r)
            return
        if method not in (None, "none", "lora"):
            raise unsupported(d.source, ("peft_method",), f"peft_method {method} is not "
                              "supported: it has no spec method (none, lora and pt do)",
                              "use peft_method lora or pt, or none for full fine-tuning")
    peft = peft_on(r)
    peft_key = "peft_method" if r.fms else "use_peft"
    if not peft:
        d.put(("method", "kind"), "full", r.origin(peft_key))
        _prequantized(r)
        return
    four, eight = r.value("load_in_4bit") is True, r.value("load_in_8bit") is True
    dora = r.value("use_dora", r.model) is True
    kind = "qlora" if four or eight else "dora" if dora else "lora"
    d.put(("method", "kind"), kind, r.origin("load_in_4bit" if four else "load_in_8bit" if eight
                                             else "use_dora" if dora else peft_key))
    if kind == "qlora":
        if dora:
            d.warn((r.key("use_dora") or "",), "DoRA on a quantized base has no spec method: "
                   "imported as qlora")
        if four:
            r.put(("method", "quantization", "bits"), "load_in_4bit", convert=lambda _: 4)
            r.put(("method", "quantization", "quant_type"), "bnb_4bit_quant_type",
                  r.model)
            r.put(("method", "quantization", "double_quant"), "use_bnb_nested_quant",
                  r.model)
            _storage(r)
        else:
            r.value("load_in_8bit")
            put_int8(d, r.origin("load_in_8bit"))
    _prequantized(r)
    lora = ("method", "lora")
    r.put(lora + ("rank",), "lora_r", r.model)
    r.put(lora + ("alpha",), "lora_alpha", r.model)
    r.put(lora + ("dropout",), "lora_dropout", r.model)
    if not put_target_modules(r, "lora_target_modules", one_item_is_string=not r.fms):
        d.warn((peft_key,), "no lora_target_modules: PEFT picks the modules per "
               "architecture; the spec's default target_modules are used instead")
    r.put(lora + ("modules_to_save",), "lora_modules_to_save")
    r.put(("method", "task_type"), "lora_task_type", r.model)


STORAGE = STORAGE_FROM_TORCH
"""bitsandbytes' ``bnb_4bit_quant_storage`` names -> the spec's ``storage_dtype``."""


def _storage(r: Reader) -> None:
    """``bnb_4bit_quant_storage``: TRL passes it to BitsAndBytesConfig (None: bitsandbytes'
    uint8, the spec's default); FSDP needs the weights' dtype."""
    d, at = r.draft, ("method", "quantization", "storage_dtype")
    value = r.value("bnb_4bit_quant_storage")
    if value is None:
        d.put(at, "uint8", f"{r.tool} default (bnb_4bit_quant_storage: None, bitsandbytes' "
              "uint8)")
    elif str(value) in STORAGE:
        d.put(at, STORAGE[str(value)], r.origin("bnb_4bit_quant_storage"))
    else:
        d.warn((r.key("bnb_4bit_quant_storage") or "",), f"bnb_4bit_quant_storage {value!r} "
               "has no spec value (bfloat16, float16, float32, uint8): uint8 used")


def _resources(draft: SpecDraft, nproc: int | None, nnodes: int | None,
               accelerator: str) -> int:
    return resources_from_flags(draft, nproc, nnodes, accelerator, "a TRL config",
                                "accelerate launch decides (--nproc-per-node)")


def training_head(r: Reader, world: int, scheduler: Callable[[Reader], None] | None = None
                  ) -> None:
    """What the training section of every importer reading TRL's key names starts with:
    duration and batch, optimizer, schedule (``scheduler``: the tool's own warmup rules),
    clipping, seed."""
    t = ("training",)
    _length_and_batch(r, world)
    _optimizer(r)
    (scheduler or _scheduler)(r)
    r.put(t + ("max_grad_norm",), "max_grad_norm", r.sft)
    r.put(t + ("seed",), "seed", r.sft)


def _training(r: Reader, world: int) -> None:
    d, t = r.draft, ("training",)
    training_head(r, world)
    r.put(t + ("gradient_checkpointing",), "gradient_checkpointing", r.sft)
    r.put(t + ("compile",), "torch_compile", r.sft)
    r.put(t + ("logging", "strategy"), "logging_strategy", r.sft)
    r.put(t + ("logging", "steps"), "logging_steps", r.sft, convert=int)
    report = r.value("report_to", r.sft)
    sinks = [report] if isinstance(report, str) else list(report or [])
    kept = [s for s in sinks if s in SINKS]
    for s in sinks:
        if s not in SINKS and s not in ("none", "all"):
            d.warn((r.key("report_to") or "",), f"report_to {s} has no spec sink")
    d.put(t + ("logging", "report_to"), kept, r.origin("report_to"))
    _evaluation(r)
    _checkpointing(r)


def _length_and_batch(r: Reader, world: int) -> None:
    """Epochs or max_steps, the batch sizes, the learning rate."""
    d, t = r.draft, ("training",)
    steps = r.value("max_steps", r.sft)
    if isinstance(steps, int) and steps > 0:
        d.put(t + ("max_steps",), steps, r.origin("max_steps"))
        d.put(t + ("epochs",), None, f"{r.origin('max_steps')}: max_steps overrides epochs")
        r.value("num_train_epochs")  # read, and overridden: transformers ignores it
    else:
        epochs = r.value("num_train_epochs", r.sft)
        whole = int(epochs) if float(epochs) == int(epochs) else int(epochs) + 1
        if whole != epochs:
            d.warn((r.key("num_train_epochs") or "",), f"num_train_epochs {epochs} is not whole: "
                   f"imported as {whole}")
        d.put(t + ("epochs",), whole, r.origin("num_train_epochs"))
    mbs = r.put(t + ("micro_batch_size",), "per_device_train_batch_size", r.sft)
    ga = r.put(t + ("gradient_accumulation_steps",), "gradient_accumulation_steps", r.sft)
    d.put(t + ("global_batch_size",), mbs * ga * world,
          f"per_device_train_batch_size x gradient_accumulation_steps x {world} processes")
    r.put(t + ("learning_rate",), "learning_rate", r.sft, convert=float)


def _optimizer(r: Reader) -> None:
    d, opt = r.draft, ("training", "optimizer")
    name = str(r.value("optim", r.sft))
    if name in OPTIMIZERS:
        spec_name, fused = OPTIMIZERS[name]
        d.put(opt + ("name",), spec_name, r.origin("optim"))
        d.put(opt + ("fused",), fused, r.origin("optim"))
    else:
        d.warn((r.key("optim") or "",), f"optim {name} has no spec optimizer: adamw used")
    r.put(opt + ("weight_decay",), "weight_decay", r.sft)
    b1, b2 = r.value("adam_beta1", r.sft), r.value("adam_beta2", r.sft)
    d.put(opt + ("betas",), [b1, b2], f"{r.origin('adam_beta1')}; {r.origin('adam_beta2')}")
    r.put(opt + ("eps",), "adam_epsilon", r.sft)


def schedule_name(r: Reader, word: str = "lr_scheduler_type") -> None:
    """``lr_scheduler_type`` and ``lr_scheduler_kwargs`` as the spec's schedule (``schedule``),
    or a warning at the key (``word``: what the source tool calls it)."""
    d, sched = r.draft, ("training", "scheduler")
    name = str(r.value("lr_scheduler_type", r.sft))
    kwargs = r.value("lr_scheduler_kwargs")
    found = schedule(name, kwargs, float(r.value("learning_rate", r.sft)))
    if found.name is None:
        d.warn((r.key("lr_scheduler_type") or "",), f"{word} {found.problem}: the spec's "
               "default (cosine, decaying to zero) is used")
        return
    at = r.origin("lr_scheduler_type")
    d.put(sched + ("name",), found.name, at if found.name == name else f"{at} ({name})")
    for key, value in found.fields.items():
        d.put(sched + (key,), value, r.origin("lr_scheduler_kwargs"))
    if found.unread:
        d.warn(("lr_scheduler_kwargs",), f"lr_scheduler_kwargs {', '.join(found.unread)} "
               f"(for {name}) have no spec field: not imported")


def _scheduler(r: Reader) -> None:
    d, sched = r.draft, ("training", "scheduler")
    schedule_name(r)
    warm = r.value("warmup_steps", r.sft)
    if isinstance(warm, float) and 0 < warm < 1:
        d.put(sched + ("warmup_ratio",), warm, f"{r.origin('warmup_steps')} (below 1: a ratio)")
    else:
        d.put(sched + ("warmup_steps",), int(warm), r.origin("warmup_steps"))


def _evaluation(r: Reader) -> None:
    d, ev = r.draft, ("training", "evaluation")
    if d.get(ev + ("strategy",)) is not None:
        return  # the data section turned it off (no evaluation data the spec can name)
    strategy = str(r.value("eval_strategy", r.sft))
    if strategy != "no" and r.has("do_eval"):
        r.used.add("do_eval")  # implied by eval_strategy
    elif r.value("do_eval") is True:
        d.warn(("do_eval",), "do_eval without eval_strategy: transformers evaluates only "
               "when eval_strategy is set; not imported")
    d.put(ev + ("strategy",), strategy, r.origin("eval_strategy"))
    if strategy == "steps":
        r.put(ev + ("steps",), "eval_steps")
    if strategy != "no":
        r.put(ev + ("batch_size",), "per_device_eval_batch_size")
    elif r.has("per_device_eval_batch_size"):
        r.value("per_device_eval_batch_size")
        d.warn(("per_device_eval_batch_size",), "per_device_eval_batch_size: eval_strategy is "
               "no, so nothing is evaluated: not imported (no effect on training)")


def _checkpointing(r: Reader) -> None:
    ck = ("training", "checkpointing")
    strategy = str(r.value("save_strategy", r.sft))
    r.draft.put(ck + ("strategy",), strategy, r.origin("save_strategy"))
    steps = r.value("save_steps", r.sft)
    if strategy == "steps" and isinstance(steps, float) and 0 < steps < 1:
        r.draft.put(ck + ("strategy",), "epoch", f"{r.origin('save_steps')} (a ratio)")
        r.draft.warn((r.key("save_steps") or "",), f"save_steps {steps} is a fraction of the "
                     "run's total steps (transformers reads a value below 1 so): the spec "
                     "counts steps; imported as saving each epoch (set "
                     "training.checkpointing.steps)")
    elif strategy == "steps":
        r.put(ck + ("steps",), "save_steps", r.sft)
    r.put(ck + ("total_limit",), "save_total_limit")


def _output(r: Reader) -> None:
    out = r.value("output_dir")
    if isinstance(out, str):
        r.draft.put(("output", "uri"), hub_or_file_uri(out) if out.startswith("/") else "file://" + out,
                    r.origin("output_dir"))
    if r.draft.data["method"]["kind"] != "full":
        r.draft.put(("output", "save_adapter_only"), True,
                    "TRL saves the PEFT adapter only")
