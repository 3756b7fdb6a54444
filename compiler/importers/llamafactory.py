"""``ftspec import llamafactory CONFIG``: a LLaMA-Factory train YAML (stage sft) as a spec.

LLaMA-Factory is not installed here (0.9.5 requires TRL <= 0.24, transformers <= 5.6 and
accelerate <= 1.11, against TRL 1.16 / transformers 5.23 / accelerate 1.15 that ftspec's
accelerate target is tested with; checked with ``pip download --no-deps``), so the YAML is
read as data, as ``llamafactory-cli`` reads it: one flat mapping of ``ModelArguments``, ``DataArguments``, ``FinetuningArguments`` and transformers'
``TrainingArguments``. The training keys are transformers' own, so the TRL importer's
training mapping is reused through a :class:`Reader` with LLaMA-Factory's key names and
defaults (``llamafactory_defaults``, which names the version). Datasets are names in
LLaMA-Factory's ``dataset_info.json``: the well-known ones map to their files or hub
repositories, any other is a warning. Stages other than sft are refused at their line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ftspec.compiler.importers import rows
from ftspec.compiler.importers.base import Imported, SpecDraft, not_this_tool, unsupported
from ftspec.compiler.importers.deepspeed_names import put_deepspeed
from ftspec.compiler.importers.flat import (
    FlatReader,
    finish,
    model_source,
    put_data,
)
from ftspec.compiler.importers.llamafactory_defaults import (
    ALIASES,
    DATASET_SPLITS,
    DATASETS,
    DEEPSPEED,
    MODEL_DEFAULTS,
    STAGES,
    TOOL,
    TRAIN_DEFAULTS,
)
from ftspec.compiler.importers.no_effect import LLAMAFACTORY as LLAMAFACTORY_NO_EFFECT
from ftspec.compiler.importers.prequantized import prequantized, put_prequantized
from ftspec.compiler.importers.trainable import (
    llamafactory_freeze,
    num_layers,
    put_int8,
    put_loraplus,
)
from ftspec.compiler.importers.trainer_fsdp import TRANSFORMERS_4, put_trainer_fsdp
from ftspec.compiler.importers.trl import _header, _output, _training
from ftspec.compiler.importers.trl_reader import Reader
from ftspec.spec.diagnostics import Diagnostic, Severity, SpecError
from ftspec.spec.loader import SourceDoc, load_spec_file
from ftspec.spec.model.method import ALL_LINEAR

ATTN = {"fa2": "flash_attention_2", "sdpa": "sdpa", "disabled": "eager"}
MARKERS = ("stage", "finetuning_type", "template", "dataset", "cutoff_len")
NO_EFFECT: tuple[str, ...] = tuple(sorted(LLAMAFACTORY_NO_EFFECT))


def import_llamafactory(path: Path, nproc: int | None = None, nnodes: int | None = None,
                        accelerator: str = "nvidia-a100-80gb", launch: Path | None = None,
                        accelerate_config: Path | None = None) -> Imported:
    """``launch`` / ``accelerate_config``: the launch script and accelerate config the run
    uses, where they are not found beside the YAML (``llamafactory_launch``)."""
    from ftspec.compiler.importers.llamafactory_launch import launch_topology
    from ftspec.compiler.importers.topology import resources_from_flags

    doc = load_spec_file(path)
    check_is_llamafactory(doc)
    draft = SpecDraft(doc)
    r = FlatReader(draft, TOOL, TRAIN_DEFAULTS, MODEL_DEFAULTS, ALIASES)
    _loss(r)
    _header(draft, path)
    _model(r)
    _data(r)
    _method(r)
    topo = launch_topology(draft, path, launch, accelerate_config)
    world = resources_from_flags(
        draft, nproc if nproc is not None else topo.nproc,
        nnodes if nnodes is not None else topo.nnodes, accelerator, "a LLaMA-Factory config",
        "accelerate launch decides (--nproc-per-node)",
        ("--nproc-per-node" if nproc is not None else topo.nproc_origin,
         "--nnodes" if nnodes is not None else topo.nnodes_origin))
    if "report_to" not in r.data:
        draft.warn(("report_to",), "no report_to: transformers 4 reports to every installed "
                   "integration (report_to all); imported as none")
    _training(r, world)
    _warmup_steps_4x(r)
    if "evaluation_strategy" in r.used:
        draft.warn(("evaluation_strategy",), "evaluation_strategy is the name transformers "
                   "before 4.46 read for eval_strategy; LLaMA-Factory 0.9.5's transformers "
                   "4.57.1 has no such field, and its parser refuses the config (unless "
                   f"ALLOW_EXTRA_ARGS): read as eval_strategy "
                   f"{r.data['evaluation_strategy']!r}, as those releases did")
    for key, (value, origin) in topo.training.items():
        draft.put(key, value, origin)
    put_trainer_fsdp(r, TRANSFORMERS_4)
    _output(r)
    if r.has("deepspeed"):
        put_deepspeed(draft, ("deepspeed",), r.value("deepspeed"), DEEPSPEED, "LLaMA-Factory")
    return finish("llamafactory", r, path, "LLaMA-Factory trains with transformers' Trainer "
                  "under accelerate/torchrun; TRL's SFTTrainer is the nearest", NO_EFFECT)


def _warmup_steps_4x(r: Reader) -> None:
    """A ``warmup_steps`` below 1 under transformers 4.57.1, which LLaMA-Factory runs: that
    fraction of one step (``get_warmup_steps`` uses it when above 0), not the ratio
    transformers 5 reads it as. The learning rate is 0 at the first step and follows the
    schedule after it: the spec's ``warmup_steps: 1``, warned."""
    steps, ratio = r.data.get("warmup_steps"), r.data.get("warmup_ratio")
    d, sched = r.draft, ("training", "scheduler")
    if isinstance(steps, (int, float)) and isinstance(ratio, (int, float)):
        r.used.add("warmup_ratio")
        if steps > 0:
            d.warn(("warmup_ratio",), "warmup_ratio is ignored: warmup_steps is set and above "
                   "0 (transformers 4.57.1 uses it); not imported")
        elif ratio > 0:  # warmup_steps 0: transformers 4 warms up by the ratio
            node = d.get(sched)
            if isinstance(node, dict):
                node.pop("warmup_steps", None)
                d.origins.pop(sched + ("warmup_steps",), None)
            d.put(sched + ("warmup_ratio",), float(ratio), f"{d.origin_of(('warmup_ratio',))}"
                  " (warmup_steps 0: transformers 4.57.1 warms up by the ratio)")
    if not (isinstance(steps, float) and 0 < steps < 1):
        return
    node = d.get(sched)
    if isinstance(node, dict):
        node.pop("warmup_ratio", None)
        d.origins.pop(sched + ("warmup_ratio",), None)
    d.put(sched + ("warmup_steps",), 1, f"{d.origin_of(('warmup_steps',))} ({steps} of a "
          "step in transformers 4: learning rate 0 at the first step)")
    d.warn(("warmup_steps",), f"warmup_steps {steps}: transformers 4.57.1 (LLaMA-Factory's) "
           f"warms up over {steps} of one step, not over that ratio of the run as transformers "
           "5 reads a value below 1: the learning rate is 0 at the first step, then follows "
           "the schedule; imported as warmup_steps 1 (the schedule counts from step 1, not "
           f"{steps}); write warmup_ratio: {steps} if a ratio was meant")


def check_is_llamafactory(doc: SourceDoc) -> None:
    if not isinstance(doc.data, dict):
        raise not_this_tool(doc, (), "not a LLaMA-Factory config: the document is not a "
                            "mapping", "give the YAML file `llamafactory-cli train` reads")
    first = next(iter(doc.data), None)
    if "model_name_or_path" not in doc.data or not any(k in doc.data for k in MARKERS):
        raise not_this_tool(doc, (first,) if first is not None else (),
                            "not a LLaMA-Factory train config: no model_name_or_path with "
                            "stage / finetuning_type / template / dataset",
                            "LLaMA-Factory's train YAML names model_name_or_path and dataset")
    stage = doc.data.get("stage", "sft")
    if stage != "sft":
        known = "a LLaMA-Factory stage" if stage in STAGES else "not a LLaMA-Factory stage"
        raise SpecError([Diagnostic(
            Severity.ERROR, f"stage {stage} ({known}): `ftspec import llamafactory` imports "
            "supervised fine-tuning (stage: sft) only", path=("stage",),
            span=doc.span_of(("stage",), key=True), code="import.unsupported",
            hint="pretraining, reward modelling, PPO, DPO and KTO have no ftspec method")])
    if "dataset" not in doc.data:
        raise not_this_tool(doc, (first,) if first is not None else (), "no dataset: the "
                            "config names no training data",
                            "LLaMA-Factory names the data with dataset (dataset_info.json names)")


def _model(r: Reader) -> None:
    d = r.draft
    model_source(r)
    attn = r.value("flash_attn")
    if attn in ATTN:
        d.put(("model", "attn_implementation"), ATTN[attn], r.origin("flash_attn"))
    elif attn not in (None, "auto"):
        d.warn(("flash_attn",), f"flash_attn {attn} has no spec attention implementation")
    if r.value("fp16") is True:
        d.put(("model", "dtype"), "fp16", r.origin("fp16"))
        _fp16_mode(r)
    elif r.value("bf16") is True or r.value("pure_bf16") is True:
        d.put(("model", "dtype"), "bf16", r.origin("bf16" if r.has("bf16") else "pure_bf16"))
        # the weights load in compute_dtype (bf16), trainable ones upcast to fp32 unless
        # pure_bf16 (which runs with bf16 off), and bf16 autocasts: a full fine-tune is
        # mixed; LoRA is a bf16 base with fp32 adapters under bf16 autocast
        full = str(r.value("finetuning_type", r.model)) in ("full", "freeze")
        mode = "pure" if r.value("pure_bf16") is True else "mixed" if full else "autocast"
        d.put(("model", "precision"), mode,
              r.origin("pure_bf16") if r.has("pure_bf16") else
              f"{TOOL}: trainable weights upcast to fp32 (no pure_bf16)" if full else
              f"{TOOL}: bf16 base weights, fp32 adapters, bf16 autocast")
    else:
        d.put(("model", "dtype"), "fp32", f"{TOOL} default (bf16 and fp16 off: fp32)")
    r.value("do_train")
    if r.data.get("do_train") is not True:
        d.warn(("do_train",) if "do_train" in r.data else (), "do_train is not true: "
               "LLaMA-Factory only trains with do_train: true; imported as a training run")


def _data(r: Reader) -> None:
    d = r.draft
    r.value("stage")
    names = [n.strip() for n in str(r.value("dataset")).split(",") if n.strip()]
    template = r.value("template")
    entries: list[dict[str, Any]] = []
    for name in names:
        known = DATASETS.get(name)
        if known is None:
            d.warn(("dataset",), f"dataset {name}: a name in your dataset_info.json, which "
                   "the import does not read; imported as file://data/" + name +
                   ".json (alpaca layout): set data.train.uri and format")
            known = (f"file://data/{name}.json", "alpaca", None)
        uri, layout, column = known
        if layout == "alpaca":
            entry = rows.alpaca_as_chat_turn(uri, d.get(("model", "family")))
            d.warn(("dataset",), rows.ALPACA_AS_CHAT_WARNING.format(
                format=entry["format"], tool="LLaMA-Factory") +
                   f" ({name}: LLaMA-Factory renders it as one chat turn)")
        elif layout == "text":
            entry = rows.text(uri, column or "text")
        else:
            entry = rows.chat(uri, column or "conversations", layout)
        if name in DATASET_SPLITS:
            entry["split"] = DATASET_SPLITS[name]
        entries.append(entry)
    # data_args.py: train_on_prompt False (the prompt is masked; every assistant turn of a
    # conversation trains), mask_history False (TRAINS_DIFFERENTLY warns when set)
    train_on_prompt = r.value("train_on_prompt") is True
    for entry in entries:
        entry["train_on_input"] = train_on_prompt  # explicit: a format may default to true
    if template is not None:
        d.warn(("template",), f"template {template}: LLaMA-Factory's own prompt template has "
               "no spec field; the tokenizer's chat template renders chat rows")
    mix = str(r.value("mix_strategy") or "concat")
    if len(entries) > 1 and mix != "concat":
        d.warn(("mix_strategy",), f"mix_strategy {mix}: LLaMA-Factory interleaves the "
               "datasets by interleave_probs; imported as their concatenation (set "
               "data.mixture's strategy and proportions to mix by share)")
    put_data(r, entries, "dataset", "LLaMA-Factory concatenates them (mix_strategy concat)",
             "val_size")
    if r.has("eval_dataset"):
        d.warn(("eval_dataset",), "eval_dataset names dataset_info.json entries: set "
               "data.validation by hand")


def _fp16_mode(r: Reader) -> None:
    """fp16: the weights load in fp16, trainable ones upcast to fp32, under fp16 autocast. A
    full fine-tune is mixed (fp16's default); LoRA is an fp16 base with fp32 adapters
    (autocast), unless additional_target also trains base modules, which the spec's
    autocast would train in fp16 (the GradScaler refuses them): mixed, warned."""
    if str(r.value("finetuning_type", r.model)) != "lora":
        return
    if r.value("additional_target"):
        r.draft.warn(("fp16",), "fp16 LoRA with additional_target: LLaMA-Factory trains the "
                     "extra modules in fp32 over fp16 weights, which the spec cannot say "
                     "(its fp16 autocast trains modules_to_save in fp16); imported as mixed "
                     "fp16 (fp32 base weights: more memory)")
        return
    r.draft.put(("model", "precision"), "autocast",
                f"{TOOL}: fp16 base weights, fp32 adapters, fp16 autocast")


LOSSES = {"use_asft_loss": "ASFT's loss (cross-entropy with a KL anchor to the reference "
          "model, asft_alpha)",
          "use_dft_loss": "DFT's loss (each token's cross-entropy scaled by its probability)",
          "use_eaft_loss": "EAFT's loss (cross-entropy weighted by the tokens' entropy)"}
"""LLaMA-Factory's loss variants (hparams/finetuning_args.py): the spec trains cross-entropy
only, so each is refused at its line."""


def _loss(r: Reader) -> None:
    for key, loss in LOSSES.items():
        if r.value(key) is True:
            raise unsupported(r.draft.source, (key,), "LLaMA-Factory trains with "
                              f"{loss}; the spec trains plain cross-entropy, which is not "
                              "the same run", f"remove {key} to train cross-entropy")


METHODS = {"oft": "OFT (orthogonal fine-tuning)"}
"""LLaMA-Factory's finetuning_type values the spec has no method for, as the refusal names
them."""


def _prequantized(r: Reader) -> None:
    """A pre-quantized checkpoint (``-GPTQ``, ``-AWQ``, ...): LLaMA-Factory loads it with its
    own quantization_config and ignores ``quantization_bit`` (model/model_utils/
    quantization.py)."""
    found = prequantized(str(r.value("model_name_or_path")))
    if found is not None:
        keys = tuple((k,) for k in ("quantization_bit", "quantization_method")
                     if r.has(k))
        put_prequantized(r.draft, found, ("model_name_or_path",), keys)


def _method(r: Reader) -> None:
    d = r.draft
    kind = str(r.value("finetuning_type", r.model))
    at = r.origin("finetuning_type")
    if kind == "freeze":
        _freeze(r, at)
        return
    if kind not in ("full", "lora"):
        raise unsupported(d.source, (r.key("finetuning_type") or "finetuning_type",),
                          f"{METHODS.get(kind, kind)} is not supported: finetuning_type {kind} "
                          "has no spec method (full, freeze and lora do)",
                          "fine-tune with finetuning_type lora, freeze or full")
    if kind == "full":
        d.put(("method", "kind"), "full", at)
        _prequantized(r)
        return
    bits = r.value("quantization_bit")
    dora = r.value("use_dora", r.model) is True
    spec_kind = "qlora" if bits in (4, 8) else "dora" if dora else "lora"
    d.put(("method", "kind"), spec_kind, r.origin("quantization_bit") if bits else at)
    pre = prequantized(str(r.value("model_name_or_path")))  # its keys then do not apply
    if bits is not None and bits not in (4, 8) and pre is None:
        raise unsupported(d.source, ("quantization_bit",), f"quantization_bit {bits}: the "
                          "spec quantizes the base to 4 or 8 bits (bitsandbytes)",
                          "use quantization_bit: 4 or 8")
    if spec_kind == "qlora":
        method = r.value("quantization_method", r.model)
        if method not in ("bnb", "bitsandbytes") and pre is None:
            raise unsupported(d.source, (r.key("quantization_method") or "quantization_bit",),
                              f"quantization_method {method}: LLaMA-Factory quantizes the "
                              f"base with {method}, over which no spec method trains (the "
                              "spec quantizes on the fly with bitsandbytes only)",
                              "use quantization_method: bnb")
    if spec_kind == "qlora" and bits == 8:
        put_int8(d, r.origin("quantization_bit"))
    elif spec_kind == "qlora":
        q = ("method", "quantization")
        d.put(q + ("bits",), bits, r.origin("quantization_bit"))
        r.put(q + ("quant_type",), "bnb_4bit_quant_type", r.model)
        r.put(q + ("double_quant",), "use_bnb_nested_quant", r.model)
        dtype = d.get(("model", "dtype")) or "bf16"
        d.put(q + ("storage_dtype",), dtype, f"{TOOL}: the 4-bit weights are stored in the "
              f"compute dtype, {dtype} (model/model_utils/quantization.py: bnb_4bit_quant_storage"
              " = compute_dtype, 'crucial for fsdp+qlora')")
    _prequantized(r)
    lora = ("method", "lora")
    rank = r.put(lora + ("rank",), "lora_r", r.model)
    if r.put(lora + ("alpha",), "lora_alpha") is None:
        d.put(lora + ("alpha",), rank * 2, f"{TOOL} default (lora_alpha: lora_rank x 2)")
    r.put(lora + ("dropout",), "lora_dropout", r.model)
    target = str(r.value("lora_target", r.model))
    if target == "all":
        d.put(lora + ("target_modules",), [ALL_LINEAR], f"{r.origin('lora_target')} (all: "
              "every linear layer but the output head, PEFT's all-linear)")
    else:
        d.put(lora + ("target_modules",), [m.strip() for m in target.split(",")],
              r.origin("lora_target"))
    extra = r.value("additional_target")
    if isinstance(extra, str):
        d.put(lora + ("modules_to_save",), [m.strip() for m in extra.split(",")],
              r.origin("additional_target"))
    _pissa(r)
    put_loraplus(r)


def _pissa(r: Reader) -> None:
    """``pissa_init``: PEFT's PiSSA initialization of the adapters (``init_weights: pissa``).
    LLaMA-Factory asks PEFT for ``pissa_niter_{pissa_iter}`` (a fast randomized SVD; default
    16 iterations), or the exact SVD (``pissa``) when ``pissa_iter`` is -1."""
    d = r.draft
    if r.value("pissa_init") is not True:
        return
    iters = r.value("pissa_iter")
    iters = 16 if iters is None else int(iters)
    d.put(("method", "lora", "init_weights"), "pissa", r.origin("pissa_init"))
    if iters != -1:
        d.warn(("pissa_iter",) if r.has("pissa_iter") else ("pissa_init",),
               f"pissa_iter {iters}: LLaMA-Factory initializes the adapters with PEFT's "
               f"pissa_niter_{iters}, a randomized SVD of {iters} iterations; the spec's pissa "
               "is the exact SVD: the adapters start from a close, not identical, "
               "decomposition (pissa_iter: -1 is the exact one)")


def _freeze(r: Reader, at: str) -> None:
    """``finetuning_type: freeze``: full fine-tuning of the layers LLaMA-Factory leaves
    trainable, as ``method.unfrozen_parameters``."""
    d = r.draft
    d.put(("method", "kind"), "full", at + " (freeze: full fine-tuning of some layers)")
    layers = num_layers(d)
    patterns = llamafactory_freeze(r, layers)
    pro = r.value("use_llama_pro") is True
    if patterns is None:
        why = (f"freeze_trainable_layers does not divide the model's {layers} layers, which "
               "use_llama_pro needs (LLaMA-Factory refuses the run)" if layers is not None
               else "the model's layer count is unknown (no catalog family)")
        d.warn(("finetuning_type",), "finetuning_type freeze: the trainable layers are "
               f"counted in the model's layers, and {why}: imported as full fine-tuning of "
               "every layer; set method.unfrozen_parameters")
        return
    which = ("every (layer count / freeze_trainable_layers)-th layer, the last of each stride "
             "(use_llama_pro: the blocks LLaMA Pro's expansion inserted)" if pro else
             "the freeze_trainable_layers last layers (default 2)")
    d.put(("method", "unfrozen_parameters"), patterns, f"{at}: LLaMA-Factory trains the "
          f"parameters whose name contains .LAYER. for {which} and freeze_trainable_modules "
          "(default all)")
    if pro:
        d.warn(("use_llama_pro",), "the trainable layers are spaced by the "
               f"model's layer count, here {layers} from model.family; a checkpoint that "
               "LLaMA-Factory's llama_pro.py expanded has its base's layers plus the inserted "
               "ones: if its config.json says otherwise, set model.architecture.num_layers "
               "and method.unfrozen_parameters from it")
