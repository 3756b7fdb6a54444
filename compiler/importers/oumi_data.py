"""``ftspec import oumi``: the ``data`` section (datasets, mixtures) and ``peft`` (method).

Oumi reads a dataset through the class registered under its ``dataset_name``, which turns
each row into a conversation, renders it with the model's chat template and trains on every
token (``assistant_only`` off). Its Alpaca class (``yahma/alpaca-cleaned``,
``tatsu-lab/alpaca``: instruction / input / output columns) becomes ``format: alpaca``; chat
datasets with a ``messages`` list become ``format: chat``. What differs from Oumi's rendering is a warning.
"""

from __future__ import annotations

from typing import Any

from ftspec.compiler.importers.base import unsupported
from ftspec.compiler.importers.no_effect import OUMI as OUMI_NO_EFFECT
from ftspec.compiler.importers.oumi_defaults import (
    ALPACA_DATASETS,
    CHAT_DATASETS,
    DATASET_DEFAULTS,
    PRETRAINING_DATASETS,
    SPLIT_DEFAULTS,
    TOOL,
)
from ftspec.compiler.importers.oumi_source import OumiReader
from ftspec.compiler.importers.prequantized import prequantized, put_prequantized
from ftspec.compiler.importers.trl_reader import hub_or_file_uri
from ftspec.spec.diagnostics import KeyPath
from ftspec.spec.dtypes import STORAGE_FROM_TORCH

SPLIT_KEYS = ("datasets", "pack", "mixture_strategy", "target_col", "collator_name")
BNB_DTYPES = STORAGE_FROM_TORCH
LORA_INIT = {"DEFAULT": "default", "GAUSSIAN": "gaussian", "PISSA": "pissa", "OLORA": "olora"}


def import_data(r: OumiReader) -> None:
    d = r.draft
    data = r.section("data")
    train = data.get("train")
    rows = train.get("datasets") if isinstance(train, dict) else None
    if not isinstance(train, dict) or not isinstance(rows, list) or not rows:
        from ftspec.compiler.importers.base import not_this_tool

        where: KeyPath = ("data", "train") if isinstance(train, dict) else \
            ("data",) if "data" in r.data else ("model",)
        raise not_this_tool(d.source, where, "no data.train.datasets: the config names no "
                            "training data", "Oumi's DataParams list them under "
                            "data.train.datasets")
    props = [ds.get("mixture_proportion") if isinstance(ds, dict) else None for ds in rows]
    base: KeyPath = ("data", "train")
    if len(rows) > 1 and all(p is not None for p in props):
        mixed = [_dataset(r, base + ("datasets", i), ("data", "mixture", "datasets", i),
                          with_proportion=True) for i in range(len(rows))]
        d.put(("data", "mixture", "datasets"), mixed, d.origin_of(base + ("datasets",)))
        strategy = str(_split_value(train, "mixture_strategy"))
        d.put(("data", "mixture", "strategy"), strategy, _split_origin(r, base,
                                                                       "mixture_strategy"))
    elif len(rows) > 1 and all(p is None for p in props):
        whole = [_dataset(r, base + ("datasets", i), ("data", "mixture", "datasets", i))
                 for i in range(len(rows))]
        d.put(("data", "mixture", "strategy"), "concatenate", d.origin_of(
            base + ("datasets",)) + " (no mixture_proportion: Oumi concatenates them)")
        d.put(("data", "mixture", "datasets"), whole, d.origin_of(base + ("datasets",)))
    else:
        d.put(("data", "train"), _dataset(r, base + ("datasets", 0), ("data", "train")),
              d.origin_of(base + ("datasets", 0)))
        for i in range(1, len(rows)):
            d.warn(base + ("datasets", i), "some datasets have a mixture_proportion and "
                   "some not: neither a mixture by proportion nor a concatenation the spec "
                   "can say; not imported")
    d.put(("data", "packed"), bool(_split_value(train, "pack")), _split_origin(r, base, "pack"))
    _split_keys(r, base, train)
    val = data.get("validation")
    vrows = val.get("datasets") if isinstance(val, dict) else None
    if isinstance(val, dict) and isinstance(vrows, list) and vrows:
        vbase: KeyPath = ("data", "validation")
        d.put(vbase, _dataset(r, vbase + ("datasets", 0), vbase),
              d.origin_of(vbase + ("datasets", 0)))
        for i in range(1, len(vrows)):
            d.warn(vbase + ("datasets", i), "one validation dataset only: not imported")
        _split_keys(r, vbase, val)
    for key in data:
        if key not in ("train", "validation") and data[key]:
            d.warn(("data", key), f"data.{key} has no spec field: not imported")


EVERY_TOKEN = ("text_with_padding", "vision_language_with_padding")
"""Oumi's collators that pad and train the labels the dataset gives (every token of its
SFT datasets unless ``assistant_only``)."""
COMPLETIONS_ONLY = "text_completions_only_with_padding"
"""Oumi's collator that masks everything before each response template: only the
assistant's tokens train."""


def _collator(r: OumiReader, base: KeyPath, name: Any, kwargs: Any) -> None:
    """``collator_name``: which tokens train. Completions-only is the spec's
    ``train_on_input: false`` on every dataset of the split; another collator is refused."""
    d, at = r.draft, base + ("collator_name",)
    if name in EVERY_TOKEN:
        return
    if name != COMPLETIONS_ONLY:
        raise unsupported(d.source, at, f"collator_name {name}: not a collator whose "
                          "trained tokens the spec can say (all of them train with "
                          f"{' or '.join(EVERY_TOKEN)}, the assistant's only with "
                          f"{COMPLETIONS_ONLY})", "use one of those collators")
    origin = f"{d.origin_of(at)} (completions only: the prompt's tokens do not train)"
    if base != ("data", "train"):  # the validation loss, over the same tokens
        d.put(base + ("train_on_input",), False, origin)
        return
    sets = d.get(("data", "mixture", "datasets"))
    if isinstance(sets, list):
        for i, entry in enumerate(sets):
            entry["train_on_input"] = False
            d.origins[("data", "mixture", "datasets", i, "train_on_input")] = origin
    else:
        d.put(("data", "train", "train_on_input"), False, origin)
    if isinstance(kwargs, dict) and kwargs:
        d.warn(base + ("collator_kwargs",), "collator_kwargs: Oumi masks up to these "
               "templates; the spec masks each row's prompt by its format (the chat "
               "template's assistant turns): the same tokens train where the templates are "
               "the chat template's own")


def _split_value(split: dict[str, Any], key: str) -> Any:
    return split.get(key, SPLIT_DEFAULTS.get(key))


def _split_origin(r: OumiReader, base: KeyPath, key: str) -> str:
    path = base + (key,)
    from ftspec.compiler.importers.base import has

    return r.draft.origin_of(path) if has(r.data, path) else \
        f"{TOOL} default ({'.'.join(map(str, path))})"


def _split_keys(r: OumiReader, base: KeyPath, split: dict[str, Any]) -> None:
    for key, value in split.items():
        if key in ("datasets", "pack", "mixture_strategy"):
            continue
        if key == "stream":
            if value is True:
                r.draft.warn(base + (key,), "stream true: Oumi reads the split as a stream "
                             "(an iterable dataset, which transformers' Trainer does not "
                             "shuffle" + ("; pack: true streams it too" if split.get("pack")
                                          is True else "") + "); the import loads the split "
                             "and the Trainer shuffles it each epoch: the same rows in "
                             "another order (no spec field)")
        elif key == "collator_name":
            _collator(r, base, value, split.get("collator_kwargs"))
        elif key == "collator_kwargs":
            continue  # read with collator_name
        elif key == "train_target" and str(value).upper() != "ALL_ASSISTANT_TURNS":
            r.draft.warn(base + (key,), f"train_target {value}: trains differently: Oumi "
                         "trains only that part of each conversation; imported with every "
                         "assistant turn trained")
        elif key == "train_target":
            continue  # every assistant turn: the spec's chat rows
        elif key == "target_col":
            r.draft.warn(base + (key,), "target_col is deprecated in Oumi 0.9 and not read "
                         "by its SFT datasets: not imported")
        elif base + (key,) in OUMI_NO_EFFECT:
            r.draft.no_effect(base + (key,))
        else:
            r.draft.warn(base + (key,), f"{value!r} has "
                         "no spec field: not imported")


def _dataset(r: OumiReader, at: KeyPath, dst: KeyPath,
             with_proportion: bool = False) -> dict[str, Any]:
    """The dataset at source path ``at`` as a spec dataset; origins go under ``dst``."""
    d = r.draft
    row = r.draft.source.value_at(at)
    if not isinstance(row, dict) or not isinstance(row.get("dataset_name"), str):
        from ftspec.compiler.importers.base import not_this_tool

        raise not_this_tool(d.source, at, "a dataset without dataset_name",
                            "each entry of datasets names its dataset_name")
    name = row["dataset_name"]
    path, kwargs = row.get("dataset_path"), row.get("dataset_kwargs") or {}
    out: dict[str, Any] = {}
    if name == "HuggingFaceDataset" and isinstance(kwargs.get("hf_dataset_path"), str):
        out["uri"] = "hf://" + kwargs["hf_dataset_path"]
    elif isinstance(path, str):
        out["uri"] = hub_or_file_uri(path if path.startswith(("/", ".", "~")) else "./" + path)
    else:
        out["uri"] = "hf://" + name
    d.origins[dst + ("uri",)] = d.origin_of(at + ("dataset_name",))
    out.update(_format(r, at, dst, name, kwargs))
    out["split"] = str(row.get("split", DATASET_DEFAULTS["split"]))
    d.origins[dst + ("split",)] = d.origin_of(at + ("split",)) if "split" in row else \
        f"{TOOL} default (DatasetParams.split)"
    if row.get("subset") is not None:
        out["subset"] = str(row["subset"])
        d.origins[dst + ("subset",)] = d.origin_of(at + ("subset",))
    if with_proportion:
        out["proportion"] = float(row["mixture_proportion"])
        d.origins[dst + ("proportion",)] = d.origin_of(at + ("mixture_proportion",))
    for key, value in row.items():
        if key not in ("dataset_name", "dataset_path", "split", "subset", "mixture_proportion",
                       "dataset_kwargs"):
            d.warn(at + (key,), f"{key}: {value!r} has no spec field: not imported")
    return out


def _pretraining_length(r: OumiReader, at: KeyPath, seq_length: Any) -> None:
    """A pretraining dataset's sequences: ``seq_length`` tokens of the concatenated documents
    (packed; ``data.max_seq_len`` in the spec)."""
    d = r.draft
    if not _split_value(r.section("data").get("train") or {}, "pack"):
        d.warn(at + ("dataset_name",), "Oumi's pretraining datasets concatenate the documents "
               "and cut them into sequences whatever data.pack says; imported unpacked, so "
               "each document is one (truncated) sequence")
    if seq_length is not None and seq_length != r.value("model", "model_max_length"):
        d.warn(at + ("dataset_kwargs", "seq_length"), f"seq_length {seq_length}: Oumi cuts "
               "the documents into sequences of that many tokens; the spec packs to "
               "data.max_seq_len (model.model_max_length)")


def _format(r: OumiReader, at: KeyPath, dst: KeyPath, name: str,
            kwargs: dict[str, Any]) -> dict[str, Any]:
    d = r.draft
    used: set[str] = set()
    if name in ALPACA_DATASETS:
        fmt: dict[str, Any] = {"format": "alpaca", "train_on_input": True}
        d.warn(at + ("dataset_name",), f"{name}: Oumi's AlpacaDataset renders each row as a "
               "system prompt, a user turn (instruction, `### Input:` and the input) and an "
               "assistant turn through the model's chat template, loss on every token; "
               f"imported as format {fmt['format']} (train_on_input true), whose prompt text "
               "differs")
    elif name in PRETRAINING_DATASETS:
        fmt = {"format": "text", "text_field": PRETRAINING_DATASETS[name]}
        used.add("seq_length")
        _pretraining_length(r, at, kwargs.get("seq_length"))
    elif name in CHAT_DATASETS or name in ("text_sft", "text_sft_jsonl", "HuggingFaceDataset"):
        column = str(kwargs.get("messages_column", "messages"))
        used |= {"messages_column", "hf_dataset_path"}
        fmt = {"format": "chat", "conversation_column": column,
               "conversation_style": "openai", "train_on_input": True}
    else:
        fmt = {"format": "chat", "conversation_column": "messages",
               "conversation_style": "openai", "train_on_input": True}
        d.warn(at + ("dataset_name",), f"{name} is not a dataset {TOOL} registers "
               "for SFT with a known layout: imported as chat rows in a messages column")
    if kwargs.get("assistant_only") is True:
        fmt["train_on_input"] = False
        used.add("assistant_only")
    origin = d.origin_of(at + ("dataset_name",))
    for key in fmt:
        d.origins[dst + (key,)] = f"{origin} (Oumi's dataset class: every token trained)" \
            if key == "train_on_input" else origin
    for key in kwargs:
        if key not in used:
            d.warn(at + ("dataset_kwargs", key), f"dataset_kwargs.{key} has no spec field: "
                   "not imported")
    return fmt


def _prequantized(r: OumiReader) -> None:
    """A pre-quantized checkpoint by its name (``-GPTQ``, ``-AWQ``, ``-bnb-4bit``, ...)."""
    found = prequantized(str(r.value("model", "model_name")))
    if found is not None:
        put_prequantized(r.draft, found, ("model", "model_name"),
                         (("peft", "q_lora"),) if r.value("peft", "q_lora") is True else ())


def import_method(r: OumiReader) -> None:
    d = r.draft
    if not r.value("training", "use_peft"):
        r.draft.put(("method", "kind"), "full", r.origin("training", "use_peft"))
        for key in r.section("peft"):
            r.warn("peft", key, f"peft.{key}: training.use_peft is false: not used")
        _prequantized(r)
        return
    q = r.value("peft", "q_lora") is True
    d.put(("method", "kind"), "qlora" if q else "lora", r.origin("peft", "q_lora"))
    _prequantized(r)
    if q:
        quant = ("method", "quantization")
        r.put(quant + ("bits",), "peft", "q_lora_bits", convert=int)
        r.put(quant + ("quant_type",), "peft", "bnb_4bit_quant_type")
        r.put(quant + ("double_quant",), "peft", "use_bnb_nested_quant")
        for key, field in (("bnb_4bit_compute_dtype", "compute_dtype"),
                           ("bnb_4bit_quant_storage", "storage_dtype")):
            value = str(r.value("peft", key))
            if value in BNB_DTYPES and (field == "storage_dtype" or value != "uint8"):
                r.put(quant + (field,), "peft", key, convert=lambda v: BNB_DTYPES[str(v)])
            else:
                r.warn("peft", key, f"{key} {value} has no spec value")
    lora = ("method", "lora")
    r.put(lora + ("rank",), "peft", "lora_r")
    r.put(lora + ("alpha",), "peft", "lora_alpha")
    r.put(lora + ("dropout",), "peft", "lora_dropout", convert=float)
    if r.put(lora + ("target_modules",), "peft", "lora_target_modules", convert=list) is None:
        r.warn("peft", "lora_target_modules", "no lora_target_modules: PEFT picks the modules "
               "per architecture; the spec's default target_modules are used instead")
    r.put(lora + ("modules_to_save",), "peft", "lora_modules_to_save", convert=list)
    r.put(lora + ("bias",), "peft", "lora_bias")
    init = str(r.value("peft", "lora_init_weights")).upper()
    if init in LORA_INIT:
        r.put(lora + ("init_weights",), "peft", "lora_init_weights",
              convert=lambda v: LORA_INIT[str(v).upper()])
    else:
        r.warn("peft", "lora_init_weights", f"lora_init_weights {init} has no spec value")
    r.put(("method", "task_type"), "peft", "lora_task_type")
