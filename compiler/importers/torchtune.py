"""``ftspec import torchtune CONFIG [key=value ...]``: a torchtune recipe config as a spec.

The spec selects the same shipped base config the torchtune target compiles from (family x
method x one device or several), so keys the spec does not model (profiler, metric logger,
checkpointer type) come back from that base unchanged. Every key the spec does model is
mapped to its field here, with torchtune's implicit defaults (``targets.torchtune_defaults``,
read from torchtune 0.6.1) written out. ``torchtune_residue`` then compiles the draft and keeps
whatever still differs as raw ``overrides.torchtune`` keys, each with a warning.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import Imported, SpecDraft, has, not_this_tool, unsupported
from ftspec.compiler.importers.torchtune_models import (
    builder_family,
    custom_architecture,
    family_of,
    missing_builder_module,
    split_builder,
)
from ftspec.compiler.importers.torchtune_source import load_source, nproc_hint, recipe_hint
from ftspec.targets.torchtune import (
    COSINE,
    DATASETS,
    HF_TO_TORCHTUNE_ATTN,
    LOSSES,
    METRIC_LOGGERS,
    OPTIMIZERS,
    STDOUT_LOGGER,
)
from ftspec.targets.torchtune_defaults import (
    COMPONENT_DEFAULTS,
    LORA_BUILDER_DEFAULTS,
    RECIPE_DEFAULTS,
    TORCHTUNE_VERSION,
)

TOOL = f"torchtune {TORCHTUNE_VERSION}"
DEFAULT_ACCELERATOR = "nvidia-a100-80gb"
DEFAULT_NPROC = 8

NAMED_DATASETS: dict[str, str] = {
    "torchtune.datasets.alpaca_dataset": "hf://tatsu-lab/alpaca",
    "torchtune.datasets.alpaca_cleaned_dataset": "hf://yahma/alpaca-cleaned",
}
"""Dataset builders with a fixed hub source; their prompt template has no spec field."""

_TT_TO_HF = {v: k for k, v in HF_TO_TORCHTUNE_ATTN.items()}
_OPTIMIZER_NAMES = {v: k for k, v in OPTIMIZERS.items()}
_LOSS_NAMES = {v: k for k, v in LOSSES.items()}
_FORMATS = {v: k for k, v in DATASETS.items() if k != "sharegpt"}  # chat_dataset: chat
_FORMATS["torchtune.datasets.alpaca_cleaned_dataset"] = "alpaca"
_SINKS = {v: [k] for k, v in METRIC_LOGGERS.items()} | {STDOUT_LOGGER: []}


def import_torchtune(path: Path, args: tuple[str, ...] = (), *, nproc: int | None = None,
                     nnodes: int | None = None, accelerator: str = DEFAULT_ACCELERATOR) -> Imported:
    from ftspec.compiler.importers.render import render

    draft = torchtune_draft(path, args, nproc=nproc, nnodes=nnodes, accelerator=accelerator)
    head = (f"Imported by `ftspec import torchtune` from {path} ({TOOL}).",
            ("Comments say where each value came from; torchtune's implicit defaults are "
             "written out."))
    return Imported("torchtune", render(draft, head), draft.data, draft.diagnostics(),
                    draft, head)


def torchtune_draft(path: Path, args: tuple[str, ...] = (), *, nproc: int | None = None,
                    nnodes: int | None = None, accelerator: str = DEFAULT_ACCELERATOR
                    ) -> SpecDraft:
    """The draft spec of a config with ``tune run``'s overrides (``import trainjob`` reads
    a torchtune runtime's config and the TrainJob's args through it)."""
    from ftspec.compiler.importers.torchtune_residue import settle

    doc = load_source(path, args)
    draft = SpecDraft(doc, tuple(a for a in args if not a.startswith("~")))
    _header(draft, path)
    _model(draft)
    world = _resources(draft, path, nproc, nnodes, accelerator)
    _method(draft)
    _data(draft)
    _training(draft, world)
    _outputs(draft)
    draft.put(("launcher",), "torchtune", "importing a torchtune config")
    settle(draft)
    return draft


def _default(what: str) -> str:
    return f"{TOOL} default ({what})"


def _header(draft: SpecDraft, path: Path) -> None:
    draft.put(("apiVersion",), "ftspec.dev/v1alpha1", "")
    draft.put(("kind",), "FineTune", "")
    stem = f"{path.parent.name}-{path.stem}" if path.stem[:1].isdigit() else path.stem
    name = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")
    name = ("tt-" + name if not name[:1].isalpha() else name)[:63].rstrip("-")
    draft.put(("metadata", "name"), name, f"the file name {path.name}")


def _refuse_unreleased_builder(draft: SpecDraft, component: str) -> None:
    """A builder of a model package the installed torchtune lacks (a config from
    torchtune's main branch: Qwen3, Llama 4): refused at the component, naming the catalog
    family the builder is, which another launcher trains."""
    module = missing_builder_module(component)
    if module is None:
        return
    family = builder_family(component)
    hint = (f"the model is the catalog's {family}: write a spec with model.family {family} "
            "and launcher: accelerate (transformers' implementation)" if family else
            "launcher: accelerate trains models torchtune does not build (model.family or "
            "model.architecture)")
    raise unsupported(draft.source, ("model", "_component_"),
                      f"model builder {component}: {module} is not in {TOOL} (its main "
                      "branch has it; no torchtune release on PyPI ships it yet), so "
                      "`tune run` cannot build this config", hint)


def _model(draft: SpecDraft) -> None:
    data = draft.source.data
    component = data["model"]["_component_"]
    family = family_of(component)
    if family is None:
        _refuse_unreleased_builder(draft, component)
    if family is None and not custom_architecture(draft):
        raise not_this_tool(
            draft.source, ("model", "_component_"),
            f"model builder {component} is not a model of ftspec's catalog with torchtune "
            "configs", "see `ftspec explain --families`; a custom llama2 / llama3_2 "
            "builder needs its dimensions in the model section; other models: launcher "
            "accelerate")
    if family is not None:
        draft.put(("model", "family"), family, draft.origin_of(("model", "_component_")))
    family = family or "custom"
    ckpt = data.get("checkpointer", {})
    ckpt_dir = ckpt.get("checkpoint_dir") if isinstance(ckpt, dict) else None
    if isinstance(ckpt_dir, str):
        draft.put(("model", "uri"), _file_uri(ckpt_dir),
                  draft.origin_of(("checkpointer", "checkpoint_dir")))
    else:
        draft.warn(("checkpointer",), "no checkpointer.checkpoint_dir: the model's location "
                   "is unknown")
        draft.put(("model", "uri"), f"hf://{family}", "unknown; set the model's location")
    draft.take(("dtype",), ("model", "dtype"))
    tok = data.get("tokenizer", {})
    tok_path = tok.get("path") if isinstance(tok, dict) else None
    if isinstance(tok_path, str) and isinstance(ckpt_dir, str) and not tok_path.startswith(
            ckpt_dir.rstrip("/") + "/"):
        draft.put(("model", "tokenizer", "uri"), _file_uri(tok_path),
                  draft.origin_of(("tokenizer", "path")))
    if isinstance(tok, dict) and isinstance(tok.get("special_tokens_path"), str):
        draft.put(("model", "tokenizer", "special_tokens_uri"),
                  _file_uri(tok["special_tokens_path"]),
                  draft.origin_of(("tokenizer", "special_tokens_path")))


def _file_uri(path: str) -> str:
    return "file://" + path


def _resources(draft: SpecDraft, path: Path, nproc: int | None, nnodes: int | None,
               accelerator: str) -> int:
    single_at = "a single-device config (its file name)"
    single = path.stem.endswith(("_single_device", "_low_memory"))
    recipe = recipe_hint(draft.source)
    if not single and recipe is not None and recipe[0].endswith("_single_device"):
        single = True
        single_at = (f"from {draft.source.file}:{recipe[1]} (its usage comment runs the "
                     f"{recipe[0]} recipe)")
    device = draft.source.data.get("device", "cuda")
    nodes_origin = "--nnodes"
    if nnodes is None:
        multinode = path.stem.endswith("_multinode")
        nnodes = 2 if multinode else 1
        nodes_origin = "a multi-node config (its file name); pass --nnodes"
    if nproc is not None:
        origin = "--nproc-per-node"
    elif single:
        nproc, origin = 1, single_at
    elif (hint := nproc_hint(draft.source)) is not None:
        nproc, origin = hint[0], f"from {draft.source.file}:{hint[1]} (its usage comment)"
    elif device == "cpu":
        nproc, origin = 1, f"{draft.origin_of(('device',))}: device cpu, one process"
    else:
        nproc, origin = DEFAULT_NPROC, (f"importer default: tune run --nproc-per-node "
                                        f"decides; {DEFAULT_NPROC} assumed")
        draft.warn(("model", "_component_"), f"the config names no process count (a "
                   f"distributed recipe, no usage comment): assumed {DEFAULT_NPROC} GPUs on "
                   "each node", hint="pass --nproc-per-node N to `ftspec import`")
    if nnodes != 1:
        draft.put(("resources", "nodes"), nnodes, nodes_origin)
        draft.put(("deploy", "target"), "kuberay", "several nodes need a cluster: a RayJob "
                  "(or kubeflow with a runtime)")
    if device == "cpu":
        draft.put(("resources", "gpus_per_node"), 0, draft.origin_of(("device",)))
        draft.put(("resources", "processes_per_node"), nproc, origin)
    else:
        draft.put(("resources", "gpus_per_node"), nproc, origin)
        draft.put(("resources", "accelerator"), accelerator,
                  "not in a torchtune config: the machine decides (--accelerator)")
    if nproc * nnodes > 1:
        draft.put(("distributed", "strategy"), "fsdp", "torchtune's distributed recipes "
                  "shard with FSDP2")
    return nproc * nnodes


def _method(draft: SpecDraft) -> None:
    model = draft.source.data["model"]
    prefix, _ = split_builder(model["_component_"])
    at = draft.origin_of(("model", "_component_"))
    if not prefix:
        draft.put(("method", "kind"), "full", at)
        return
    quantized = prefix == "qlora_" or model.get("quantize_base") is True
    dora = model.get("use_dora") is True
    if quantized and dora:
        draft.warn(("model", "use_dora"), "QDoRA (DoRA on a quantized base) has no spec "
                   "method; imported as qlora")
    kind = "qlora" if quantized else "dora" if dora else "lora"
    draft.put(("method", "kind"), kind, at if prefix == "qlora_" or kind == "lora" else
              draft.origin_of(("model", "quantize_base" if quantized else "use_dora")))
    if kind == "qlora":
        draft.put(("method", "quantization"), {"bits": 4, "quant_type": "nf4"},
                  f"{TOOL}: QLoRA quantizes the base to NF4 (torchao)")
    attn = model.get("lora_attn_modules", [])
    modules = [_TT_TO_HF.get(m, m) for m in attn] if isinstance(attn, list) else attn
    lora = ("method", "lora")
    draft.put(lora + ("target_modules",), modules,
              draft.origin_of(("model", "lora_attn_modules")))
    for src, dst in (("apply_lora_to_mlp", "mlp"), ("apply_lora_to_output", "output"),
                     ("lora_rank", "rank"), ("lora_alpha", "alpha"),
                     ("lora_dropout", "dropout")):
        if not draft.take(("model", src), lora + (dst,)) and src in LORA_BUILDER_DEFAULTS:
            draft.put(lora + (dst,), LORA_BUILDER_DEFAULTS[src], _default(f"model.{src}"))


def _data(draft: SpecDraft) -> None:
    data = draft.source.data
    ds = data.get("dataset")
    if not isinstance(ds, dict):
        raise not_this_tool(draft.source, ("dataset",), "dataset is not one component "
                            "(a list of datasets cannot be imported yet)",
                            "give one dataset component")
    component = ds.get("_component_")
    if component in _FORMATS:
        _generic_dataset(draft, ds, str(component))
    else:
        raise not_this_tool(draft.source, ("dataset", "_component_"),
                            f"dataset builder {component} is not one ftspec can import",
                            "use torchtune.datasets.instruct_dataset, chat_dataset or "
                            "text_completion_dataset (or alpaca_dataset)")
    defaults = COMPONENT_DEFAULTS.get(str(component), {})
    for src, dst in (("packed", ("data", "packed")),):
        if not draft.take(("dataset", src), dst):
            draft.put(dst, defaults.get(src, False), _default(f"dataset.{src}"))
    draft.take(("shuffle",), ("data", "shuffle"))
    tok = data.get("tokenizer", {})
    max_len = tok.get("max_seq_len") if isinstance(tok, dict) else None
    if isinstance(max_len, int):
        draft.take(("tokenizer", "max_seq_len"), ("data", "max_seq_len"))
    elif isinstance(tok, dict) and "max_seq_len" in tok:
        draft.take(("tokenizer", "max_seq_len"), ("data", "max_seq_len"))  # null: no truncation
    else:
        draft.put(("data", "max_seq_len"), None, "no tokenizer.max_seq_len: the tokenizer "
                  "builder's default, no truncation")


def _generic_dataset(draft: SpecDraft, ds: dict[str, Any], component: str) -> None:
    train = ("data", "train")
    draft.put(train + ("format",), _FORMATS[component], draft.origin_of(("dataset",
                                                                         "_component_")))
    source = ds.get("source")
    if source == "json" or source == "csv" or source == "parquet":
        files = ds.get("data_files")
        draft.put(train + ("uri",), _file_uri(str(files)),
                  draft.origin_of(("dataset", "data_files")))
    elif isinstance(source, str):
        draft.put(train + ("uri",), f"hf://{source}", draft.origin_of(("dataset", "source")))
    elif component in NAMED_DATASETS:  # the builder's own hub source
        draft.put(train + ("uri",), NAMED_DATASETS[component],
                  draft.origin_of(("dataset", "_component_")))
    for src, dst in (("split", "split"), ("name", "subset"), ("column_map", "column_map"),
                     ("train_on_input", "train_on_input"),
                     ("new_system_prompt", "new_system_prompt"),
                     ("conversation_column", "conversation_column"),
                     ("conversation_style", "conversation_style"), ("column", "text_field")):
        if not draft.take(("dataset", src), train + (dst,)):
            default = COMPONENT_DEFAULTS[component].get(src)
            if default is not None:
                draft.put(train + (dst,), default, _default(f"dataset.{src}"))


def _training(draft: SpecDraft, world: int) -> None:
    src = draft.source.data
    t = ("training",)
    draft.take(("epochs",), t + ("epochs",))
    draft.take(("max_steps_per_epoch",), t + ("max_steps_per_epoch",))
    draft.take(("batch_size",), t + ("micro_batch_size",))
    draft.take(("gradient_accumulation_steps",), t + ("gradient_accumulation_steps",))
    mbs, ga = src.get("batch_size"), src.get("gradient_accumulation_steps", 1)
    if isinstance(mbs, int) and isinstance(ga, int):
        draft.put(t + ("global_batch_size",), mbs * ga * world,
                  f"batch_size x gradient_accumulation_steps x {world} processes")
    _optimizer(draft)
    _scheduler(draft)
    logger = src.get("metric_logger")
    sink = _SINKS.get(str(logger.get("_component_"))) if isinstance(logger, dict) else None
    if sink is not None:
        draft.put(t + ("logging", "report_to"), sink,
                  draft.origin_of(("metric_logger", "_component_")))
    if has(src, ("loss", "_component_")):
        name = _LOSS_NAMES.get(src["loss"]["_component_"])
        if name is not None:
            draft.put(t + ("loss",), name, draft.origin_of(("loss", "_component_")))
    draft.take(("seed",), t + ("seed",))
    for key, dst in (("clip_grad_norm", t + ("max_grad_norm",)),
                     ("compile", t + ("compile",)),
                     ("enable_activation_checkpointing", t + ("gradient_checkpointing",)),
                     ("enable_activation_offloading", t + ("activation_offloading",)),
                     ("log_every_n_steps", t + ("logging", "steps"))):
        if not draft.take((key,), dst):
            draft.put(dst, RECIPE_DEFAULTS[key], _default(key))


def _optimizer(draft: SpecDraft) -> None:
    src = draft.source.data.get("optimizer")
    if not isinstance(src, dict):
        return
    opt = ("training", "optimizer")
    component = src.get("_component_")
    draft.take(("optimizer", "lr"), ("training", "learning_rate"))
    name = _OPTIMIZER_NAMES.get(str(component))
    if name is None:
        return  # an optimizer without a spec name: kept raw (torchtune_residue)
    draft.put(opt + ("name",), name, draft.origin_of(("optimizer", "_component_")))
    defaults = COMPONENT_DEFAULTS.get(str(component), {})
    for key in ("weight_decay", "betas", "eps", "fused", "momentum"):
        if not draft.take(("optimizer", key), opt + (key,)) and key in defaults:
            draft.put(opt + (key,), defaults[key], _default(f"{component} {key}"))


def _scheduler(draft: SpecDraft) -> None:
    src = draft.source.data.get("lr_scheduler")
    sched = ("training", "scheduler")
    if src is None:
        draft.put(sched + ("name",), "constant", _default("no lr_scheduler: constant"))
        return
    if not isinstance(src, dict) or src.get("_component_") != COSINE:
        return  # another schedule: kept raw (torchtune_residue)
    cycles = src.get("num_cycles", COMPONENT_DEFAULTS[COSINE]["num_cycles"])
    at = draft.origin_of(("lr_scheduler", "num_cycles")) if "num_cycles" in src else \
        _default("lr_scheduler.num_cycles")
    if cycles == 0:
        draft.put(sched + ("name",), "constant_with_warmup", at)
    else:
        draft.put(sched + ("name",), "cosine", draft.origin_of(("lr_scheduler", "_component_")))
        draft.put(sched + ("num_cycles",), cycles, at)
    draft.take(("lr_scheduler", "num_warmup_steps"), sched + ("warmup_steps",))


def _outputs(draft: SpecDraft) -> None:
    src = draft.source.data
    if isinstance(src.get("output_dir"), str):
        draft.put(("output", "uri"), _file_uri(src["output_dir"]), draft.origin_of(
            ("output_dir",)))
    peft = draft.data["method"]["kind"] != "full"
    if peft and not draft.take(("save_adapter_weights_only",), ("output", "save_adapter_only")):
        draft.put(("output", "save_adapter_only"), RECIPE_DEFAULTS["save_adapter_weights_only"],
                  _default("save_adapter_weights_only"))
    if draft.data.get("distributed", {}).get("strategy") == "fsdp":
        fsdp = ("distributed", "fsdp")
        if not draft.take(("fsdp_cpu_offload",), fsdp + ("cpu_offload",)):
            draft.put(fsdp + ("cpu_offload",), RECIPE_DEFAULTS["fsdp_cpu_offload"],
                      _default("fsdp_cpu_offload"))
        reshard = src.get("fsdp_reshard_after_forward", RECIPE_DEFAULTS[
            "fsdp_reshard_after_forward"])
        draft.put(fsdp + ("sharding",), "full_shard" if reshard else "shard_grad_op",
                  draft.origin_of(("fsdp_reshard_after_forward",))
                  if "fsdp_reshard_after_forward" in src
                  else _default("fsdp_reshard_after_forward: True"))
