"""``ftspec import axolotl CONFIG``: an axolotl train YAML (SFT) as a spec (launcher accelerate).

axolotl is not installed here: axolotl 0.19.0 pins transformers 5.16.1, TRL 1.9.0 and PEFT
0.20.0 exactly, which conflict with the transformers 5.23 / TRL 1.16 ftspec's accelerate
target is tested against (checked with ``pip download --no-deps``). So the YAML is read
as data, the way axolotl's pydantic schema reads it; the defaults it applies are written out
from ``axolotl_defaults`` (which names the version). Keys are read through the TRL
importer's :class:`Reader` under their TRL names, so its optimizer table applies unchanged.
Preference training (``rl:``) and reward models are refused at their line; every other key
without a spec field becomes a warning at its line.
"""

from __future__ import annotations

from pathlib import Path

from ftspec.compiler.importers.axolotl_data import PRETRAINING, data, distributed
from ftspec.compiler.importers.axolotl_defaults import (
    ALIASES,
    MODEL_DEFAULTS,
    TOOL,
    TRAIN_DEFAULTS,
)
from ftspec.compiler.importers.base import Imported, SpecDraft, not_this_tool, unsupported
from ftspec.compiler.importers.flat import (
    TRAINS_DIFFERENTLY,
    FlatReader,
    finish,
    model_source,
    resources,
)
from ftspec.compiler.importers.no_effect import AXOLOTL as NO_EFFECT
from ftspec.compiler.importers.prequantized import Prequantized, prequantized, put_prequantized
from ftspec.compiler.importers.trainable import (
    put_int8,
    put_loraplus,
    put_target_modules,
    put_unfrozen,
)
from ftspec.compiler.importers.trl import _header, schedule_name, training_head
from ftspec.compiler.importers.trl_reader import Reader, hub_or_file_uri
from ftspec.spec.diagnostics import Diagnostic, Severity, SpecError
from ftspec.spec.loader import SourceDoc, load_spec_file
from ftspec.spec.model.method import ALL_LINEAR

ATTN = {"flash_attention": "flash_attention_2", "sdp_attention": "sdpa",
        "eager_attention": "eager"}
NOT_SFT = ("rl", "reward_model", "process_reward_model")


def import_axolotl(path: Path, nproc: int | None = None, nnodes: int | None = None,
                   accelerator: str = "nvidia-a100-80gb") -> Imported:
    doc = load_spec_file(path)
    check_is_axolotl(doc)
    draft = SpecDraft(doc)
    r = FlatReader(draft, TOOL, TRAIN_DEFAULTS, MODEL_DEFAULTS, ALIASES)
    _parallel_layout(r)
    _header(draft, path)
    _model(r)
    data(r)
    _chat_template(r)
    _method(r)
    shard = r.value("dp_shard_size")
    if nproc is None and nnodes is None and isinstance(shard, int) and shard > 1:
        from ftspec.compiler.importers.topology import resources_from_flags

        world = resources_from_flags(  # FSDP's shard group: every process
            r.draft, shard, None, accelerator, "an axolotl config", "dp_shard_size",
            (f"{r.origin('dp_shard_size')} (FSDP shards over that many processes)",
             "--nnodes"))
    else:
        world = resources(r, "an axolotl config", nproc, nnodes, accelerator)
    _training(r, world)
    put_loraplus(r, weight_decay_applies=False)
    put_unfrozen(r)
    distributed(r)
    out = str(r.value("output_dir") or "./outputs")
    draft.put(("output", "uri"), hub_or_file_uri(out) if out.startswith("/") else
              "file://" + out, r.origin("output_dir") if r.has("output_dir") else
              f"{TOOL} default (output_dir ./outputs)")
    if draft.data["method"]["kind"] != "full":
        draft.put(("output", "save_adapter_only"), True, "axolotl saves the adapter only")
    return finish("axolotl", r, path, "axolotl trains with a transformers Trainer under "
                  "accelerate launch; TRL's SFTTrainer is the nearest", tuple(NO_EFFECT))


def _chat_template(r: FlatReader) -> None:
    """axolotl renders chat rows with the Hugging Face tokenizer's Jinja template (its named
    templates are Jinja too), the whole conversation at once: the spec says so by naming the
    tokenizer as ``model.chat_template`` (TRL's ``chat_template_path``), not by leaving it
    unset, which would mean torchtune's per-message layout."""
    data = r.draft.data.get("data", {})
    sets = [data.get("train")] + list((data.get("mixture") or {}).get("datasets", []))
    if not any(isinstance(ds, dict) and ds.get("format") in ("chat", "sharegpt") for ds in sets):
        return
    tokenizer = r.value("tokenizer_config") or r.value("base_model")
    r.draft.put(("model", "chat_template"), str(tokenizer), (
        r.origin("tokenizer_config") if r.has("tokenizer_config") else r.origin("base_model"))
        + " (axolotl renders chat rows with this tokenizer's chat template)")


def check_is_axolotl(doc: SourceDoc) -> None:
    if not isinstance(doc.data, dict):
        raise not_this_tool(doc, (), "not an axolotl config: the document is not a mapping",
                            "give the YAML file `axolotl train` reads")
    first = next(iter(doc.data), None)
    if "base_model" not in doc.data or not (isinstance(doc.data.get("datasets"), list)
                                            or isinstance(doc.data.get(PRETRAINING), list)):
        raise not_this_tool(doc, (first,) if first is not None else (),
                            "not an axolotl config: no base_model with a datasets (or "
                            f"{PRETRAINING}) list",
                            "axolotl's config names base_model and datasets: [{path, type}]")
    for key in NOT_SFT:
        if doc.data.get(key):
            raise SpecError([Diagnostic(
                Severity.ERROR, f"{key}: {doc.data[key]}: `ftspec import axolotl` imports "
                "supervised fine-tuning only", path=(key,), span=doc.span_of((key,), key=True),
                code="import.unsupported",
                hint="preference and reward-model training have no ftspec method")])
    if doc.data.get("learning_rate") is None:
        raise not_this_tool(doc, (first,) if first is not None else (), "no learning_rate: "
                            "axolotl requires one", "set learning_rate in the axolotl config")


def _model(r: Reader) -> None:
    d = r.draft
    model_source(r)
    for key, impl in ATTN.items():
        if r.value(key) is True:
            d.put(("model", "attn_implementation"), impl, r.origin(key))
    impl = r.value("attn_implementation")  # axolotl's newer key, transformers' names
    if impl in ATTN.values():
        d.put(("model", "attn_implementation"), impl, r.origin("attn_implementation"))
    elif impl is not None:
        d.warn(("attn_implementation",), f"attn_implementation {impl!r} has no spec value "
               "(sdpa, eager, flash_attention_2): not imported, transformers picks the attention")
    if r.value("xformers_attention") is True:
        d.warn(("xformers_attention",), "xformers attention has no spec implementation")
    bf16, fp16 = r.value("bf16", r.sft), r.value("fp16") is True
    if fp16:
        d.put(("model", "dtype"), "fp16", r.origin("fp16"))
        if r.value("adapter") is not None and not r.value("lora_modules_to_save"):
            d.put(("model", "precision"), "autocast", r.origin("fp16") + " (axolotl loads "
                  "the weights in fp16 and trains PEFT's fp32 adapters under fp16 autocast)")
        else:
            d.warn(("fp16",), "axolotl loads fp16 weights under fp16 autocast, which "
                   "transformers' GradScaler refuses for trained fp16 weights (no adapter, "
                   "or lora_modules_to_save); imported as mixed fp16 (fp32 weights under "
                   "fp16 autocast)", hint="use bf16 where the GPU has it")
    elif bf16 is False:
        d.put(("model", "dtype"), "fp32", r.origin("bf16"))
    else:
        d.put(("model", "dtype"), "bf16", r.origin("bf16") + (" (auto: bf16 on GPUs that "
              "have it)" if bf16 == "auto" else ""))
        d.put(("model", "precision"), "autocast", r.origin("bf16") + " (axolotl loads the "
              "weights in bf16 and trains with transformers' bf16 autocast)")
    if r.value("tf32") is True:
        d.warn(("tf32",), f"tf32 True: trains differently: {TRAINS_DIFFERENTLY['tf32']}")
    template = r.value("chat_template")
    if template not in (None, "tokenizer_default"):
        d.warn(("chat_template",), f"chat_template {template}: axolotl's named template has "
               "no spec field; the tokenizer's own chat template renders chat rows")
    special = r.value("special_tokens") or {}
    for key, value in special.items():
        if key == "pad_token":
            d.put(("model", "tokenizer", "pad_token"), value,
                  d.origin_of(("special_tokens", key)))
        elif key == "eos_token":
            d.warn(("special_tokens", key), f"special_tokens.eos_token {value!r}: axolotl "
                   "makes it the tokenizer's end-of-sequence token (added to the vocabulary, "
                   "embeddings resized, if it is new), so its rows end with it and it is "
                   "trained there; the import keeps the model tokenizer's own EOS: rows end "
                   "with that token instead (no spec field)")
        else:
            d.warn(("special_tokens", key), f"special_tokens.{key} has no spec field")
    eot = r.value("eot_tokens")
    if eot is not None:
        chat = any(isinstance(ds, dict) and ds.get("type") == "chat_template"
                   for ds in r.data.get("datasets") or [])
        d.warn(("eot_tokens",), f"eot_tokens {eot!r}: " + (
            "axolotl trains these tokens where they end a trained turn (train_on_eot, by "
            "default train_on_eos: turn); the spec's chat rows train each assistant turn "
            "with the tokenizer's EOS after it (and, under chatml, its <|im_end|> tag): "
            "another turn-end token stays untrained (no spec field)" if chat else "used by axolotl's chat_template datasets only, "
            "and this config has none: nothing trains differently"))


LAYOUTS = {"tensor_parallel_size": "splits each layer's weights over that many processes "
           "(tensor parallelism)",
           "dp_replicate_size": "replicates the FSDP-sharded model over that many groups "
           "(HSDP: dp_shard_size processes shard it, dp_replicate_size groups hold copies)"}
"""axolotl's N-D parallelism keys the spec has no layout for: each refused at its line
(imported as FSDP over every process, the world and with it the global batch would be
another)."""


def _parallel_layout(r: Reader) -> None:
    """``tensor_parallel_size`` / ``dp_replicate_size`` above 1: refused at the line
    (``dp_shard_size`` alone is FSDP over that many processes: the resources' count)."""
    for key, what in LAYOUTS.items():
        value = r.value(key)
        if isinstance(value, int) and value > 1:
            world = 1
            for size in ("dp_shard_size", "dp_replicate_size", "tensor_parallel_size",
                         "context_parallel_size"):
                got = r.data.get(size)
                world *= got if isinstance(got, int) and got > 1 else 1
            raise unsupported(r.draft.source, (key,), f"{key} {value}: axolotl {what}, on "
                              f"{world} processes here; the spec has no such layout (as "
                              "FSDP over every process, the world and the global batch "
                              "would be others)", "train with FSDP alone (dp_shard_size "
                              "only), or keep axolotl for this run")


def _quantization_config(r: Reader) -> None:
    """``model_quantization_config``: the transformers quantization config the base loads
    with. MXFP4 with ``dequantize: true`` (gpt-oss) loads the checkpoint's weights as bf16,
    the base the spec trains over: nothing differs; any other is refused at its line."""
    config = r.value("model_quantization_config")
    kwargs = r.value("model_quantization_config_kwargs") or {}
    if config is None:
        return
    if config == "Mxfp4Config" and isinstance(kwargs, dict) and kwargs.get("dequantize"):
        r.draft.no_effect(("model_quantization_config",))
        return
    raise unsupported(r.draft.source, ("model_quantization_config",),
                      f"model_quantization_config {config}: the base loads quantized by it, "
                      "which no spec method trains over (the spec's quantized bases are "
                      "bitsandbytes' (qlora) and GPTQ's (gptq_lora))",
                      "load it dequantized (Mxfp4Config with dequantize: true), or use "
                      "adapter: qlora")


def _prequantized(r: Reader) -> None:
    """A pre-quantized base: ``gptq: true`` (axolotl loads the GPTQ checkpoint with its own
    quantization_config), or a quantized checkpoint's name."""
    _quantization_config(r)
    name = str(r.value("base_model"))
    found = prequantized(name)
    if r.value("gptq") is True:
        found = Prequantized("gptq", 4, "gptq: true")
        model_key: tuple[str, ...] = ("gptq",)
    else:
        model_key = (r.key("base_model") or "base_model",)
    if found is not None:
        put_prequantized(r.draft, found, model_key, tuple(
            (k,) for k in ("load_in_4bit", "load_in_8bit") if r.value(k) is True))


def _method(r: Reader) -> None:
    d = r.draft
    adapter = r.value("adapter")
    if adapter is None:
        d.put(("method", "kind"), "full", f"{TOOL} default (no adapter: full fine-tuning)")
        for key in ("load_in_4bit", "load_in_8bit"):  # false: the weights' own dtype
            if r.value(key) is True:
                d.warn((key,), f"{key} without an adapter: a quantized base has no full "
                       "fine-tuning; imported as full fine-tuning of unquantized weights")
        _prequantized(r)
        return
    four, eight = r.value("load_in_4bit") is True, r.value("load_in_8bit") is True
    dora = r.value("use_dora", r.model) is True
    if adapter not in ("lora", "qlora"):
        raise unsupported(d.source, ("adapter",), f"adapter {adapter} is not supported: it "
                          "has no spec method (lora and qlora do)",
                          "fine-tune with adapter lora or qlora, or without an adapter")
    kind = "qlora" if adapter == "qlora" or four or eight else "dora" if dora else "lora"
    if eight and (four or adapter == "qlora"):
        d.warn(("load_in_8bit",), "load_in_8bit with a 4-bit base (adapter qlora / "
               "load_in_4bit): imported as the 4-bit base")
    elif eight and dora:
        d.warn(("use_dora",), "DoRA on an 8-bit base has no spec method: imported as LoRA on "
               "the 8-bit base (qlora, bits 8)")
    d.put(("method", "kind"), kind, r.origin("adapter"))
    if kind == "qlora" and eight and not (four or adapter == "qlora"):
        put_int8(d, r.origin("load_in_8bit"))
    elif kind == "qlora":
        q = ("method", "quantization")
        d.put(q + ("bits",), 4, r.origin("load_in_4bit"))
        r.put(q + ("quant_type",), "bnb_4bit_quant_type", r.model)
        r.put(q + ("double_quant",), "use_bnb_nested_quant", r.model)
        r.put(q + ("storage_dtype",), "bnb_4bit_quant_storage", r.model)
    _prequantized(r)
    lora = ("method", "lora")
    if r.put(lora + ("rank",), "lora_r") is None or r.put(lora + ("alpha",), "lora_alpha") \
            is None:
        d.warn(("adapter",), "lora_r and lora_alpha have no axolotl default: the spec's are "
               "used")
    r.put(lora + ("dropout",), "lora_dropout", r.model)
    if r.value("lora_target_linear") is True:
        d.put(lora + ("target_modules",), [ALL_LINEAR], f"{r.origin('lora_target_linear')} "
              "(PEFT's all-linear: every linear layer but the output head)")
        r.value("lora_target_modules")
    elif r.value("lora_target_modules"):
        put_target_modules(r, "lora_target_modules")
    r.put(lora + ("modules_to_save",), "lora_modules_to_save")


def _training(r: Reader, world: int) -> None:
    d, t = r.draft, ("training",)
    training_head(r, world, _scheduler)
    checkpointing = r.value("gradient_checkpointing", r.sft)
    if isinstance(checkpointing, bool):
        d.put(t + ("gradient_checkpointing",), checkpointing, r.origin("gradient_checkpointing"))
    else:
        d.put(t + ("gradient_checkpointing",), True, r.origin("gradient_checkpointing"))
        d.warn(("gradient_checkpointing",), f"gradient_checkpointing {checkpointing}: "
               "imported as plain activation checkpointing")
    compiled = r.value("torch_compile", r.sft)
    d.put(t + ("compile",), compiled is True, r.origin("torch_compile"))
    if compiled == "auto":
        d.warn(("torch_compile",), "torch_compile auto: imported as off")
    if r.has("logging_steps"):
        r.put(t + ("logging", "steps"), "logging_steps")
    else:
        d.warn(("logging_steps",), "no logging_steps: axolotl logs every 0.5% of the steps (1 to 10); the "
               "spec's default is used")
    sinks = (["wandb"] if r.value("wandb_project") else []) + \
        (["tensorboard"] if r.value("use_tensorboard") is True else []) + \
        (["mlflow"] if r.value("mlflow_tracking_uri") else [])
    d.put(t + ("logging", "report_to"), sinks, r.origin("wandb_project") if sinks else
          f"{TOOL} default (no wandb_project / use_tensorboard / mlflow_tracking_uri)")
    _cadence(r, "evaluation", "eval_steps", "evals_per_epoch", "eval_strategy")
    _cadence(r, "checkpointing", "save_steps", "saves_per_epoch", "save_strategy")
    r.put(t + ("checkpointing", "total_limit"), "save_total_limit", r.sft)
    if r.draft.get(t + ("evaluation", "strategy")) != "no":
        r.put(t + ("evaluation", "batch_size"), "per_device_eval_batch_size")


def _scheduler(r: Reader) -> None:
    d, sched = r.draft, ("training", "scheduler")
    schedule_name(r, "lr_scheduler")
    _min_lr(r)
    if r.has("warmup_steps") and isinstance(r.data.get("warmup_steps"), int):
        r.put(sched + ("warmup_steps",), "warmup_steps")
    elif r.has("warmup_steps"):
        r.put(sched + ("warmup_ratio",), "warmup_steps")
    else:
        d.put(sched + ("warmup_ratio",), 0.03, f"{TOOL} default (3% of the steps)")
        d.warn(("warmup_steps",), "no warmup_steps / warmup_ratio: axolotl warms up for 3% of the steps, "
               "at most 100; imported as warmup_ratio 0.03")


def _min_lr(r: Reader) -> None:
    """``cosine_min_lr_ratio``: axolotl's cosine then decays to that share of the peak
    (``get_cosine_schedule_with_min_lr``: (1 - ratio) x the half cosine + ratio, transformers'
    ``cosine_with_min_lr`` formula); with ``cosine_constant_lr_ratio`` or a quadratic warm-up
    axolotl builds another schedule."""
    ratio, sched = r.value("cosine_min_lr_ratio"), ("training", "scheduler")
    if not ratio:  # None or 0: axolotl's plain cosine
        return
    at = r.origin("cosine_min_lr_ratio")
    if r.value("lr_scheduler_type", r.sft) != "cosine":
        r.draft.warn(("cosine_min_lr_ratio",), "cosine_min_lr_ratio is read with "
                     "lr_scheduler: cosine only: no effect")
    elif r.value("cosine_constant_lr_ratio") or r.value("lr_quadratic_warmup") is True:
        r.draft.warn(("cosine_min_lr_ratio",), "cosine_min_lr_ratio with "
                     "cosine_constant_lr_ratio or lr_quadratic_warmup: axolotl builds another "
                     "schedule, which has no spec name; imported as the plain cosine")
    elif float(ratio) >= 1:  # the floor is the peak: the rate stays there after warm-up
        r.draft.put(sched + ("name",), "constant_with_warmup", f"{at} (a floor of "
                    f"{ratio} x the peak: constant after warm-up)")
    else:
        r.draft.put(sched + ("min_lr_ratio",), float(ratio), at)


def _cadence(r: Reader, part: str, steps_key: str, per_epoch_key: str,
             strategy_key: str) -> None:
    d, at = r.draft, ("training", part)
    no_eval = part == "evaluation" and not r.draft.get(("data", "validation_split_ratio"))
    steps, per_epoch = r.value(steps_key), r.value(per_epoch_key)
    strategy = r.value(strategy_key)
    if no_eval:
        d.put(at + ("strategy",), "no", r.origin("val_set_size") + " (no validation split)")
        for key in (steps_key, per_epoch_key, strategy_key):
            if r.has(key):
                d.warn((key,), f"{key} without a validation split: not imported")
    elif isinstance(steps, int):
        d.put(at + ("strategy",), "steps", r.origin(steps_key))
        d.put(at + ("steps",), steps, r.origin(steps_key))
    elif strategy in ("no", "epoch"):
        d.put(at + ("strategy",), strategy, r.origin(strategy_key))
    elif per_epoch is not None:
        d.put(at + ("strategy",), "epoch", r.origin(per_epoch_key))
        if per_epoch != 1:
            d.warn((per_epoch_key,), f"{per_epoch_key} {per_epoch}: axolotl runs it every "
                   f"1/{per_epoch} of an epoch's steps; the spec counts steps or epochs: "
                   "imported as once per epoch")
    else:
        default = "epoch" if part == "checkpointing" else "no"
        d.put(at + ("strategy",), default, f"{TOOL} default (no {steps_key} / "
              f"{per_epoch_key} / {strategy_key}: axolotl's trainer builder)")
