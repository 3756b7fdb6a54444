"""The ``data`` section of ``ftspec import trl``: TRL's ``dataset_name`` or the
alignment-handbook's mixtures (``trl_mixture``), the row format, validation data, sequence
length and packing; fms-hf-tuning's local files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import not_this_tool, unsupported
from ftspec.compiler.importers.model_source import (
    DATA_SUFFIXES,
    first_row_columns,
    format_of_columns,
    local_path,
    sniff_rows,
    source_uri,
)
from ftspec.compiler.importers.trl_defaults import SCRIPT_DEFAULTS
from ftspec.compiler.importers.trl_mixture import (
    CHAT_COLUMN,
    MIXER,
    MIXTURE,
    Source,
    extra_columns,
    mixer_sources,
    mixture_seed,
    mixture_sources,
    mixture_validation,
    warn_shares,
)
from ftspec.compiler.importers.trl_reader import Reader, hub_or_file_uri
from ftspec.spec.diagnostics import KeyPath


def _dataset(r: Reader, src: Source, split: str) -> dict[str, Any]:
    local = local_path(src.name, r.draft)
    sniffed = sniff_rows(local) if local is not None else None
    ds: dict[str, Any] = {"uri": source_uri(src.name, r.draft), "split": split,
                          "format": sniffed or _format(r)}
    if isinstance(src.subset, str):
        ds["subset"] = src.subset
    if ds["format"] == "chat":
        ds["conversation_column"] = CHAT_COLUMN
        ds["conversation_style"] = "openai"
        # TRL trains every token of a conversation unless assistant_only_loss
        ds["train_on_input"] = r.value("assistant_only_loss", r.sft) is not True
    if ds["format"] == "text":
        ds["text_field"] = r.value("dataset_text_field", r.sft)
    return ds


def _mask_origin(r: Reader) -> str:
    return (f"{r.origin('assistant_only_loss')}: conversational rows train "
            + ("the assistant turns only" if r.value("assistant_only_loss", r.sft) is True
               else "every token (TRL's SFTTrainer)"))


def _format(r: Reader) -> str:
    chat = (r.has("chat_template") or r.has(MIXER) or r.has(MIXTURE)
            or r.value("assistant_only_loss") is True)
    return "chat" if chat else "text"


def _sources(r: Reader, train_split: str, subset: Any) -> tuple[list[Source], str]:
    """The training datasets and the key that names them."""
    if r.has(MIXTURE):
        return mixture_sources(r), MIXTURE
    if isinstance(r.value(MIXER), dict):
        return mixer_sources(r, train_split, subset), MIXER
    if isinstance(r.value("datasets"), list) and r.value("datasets"):
        return trl_datasets(r), "datasets"
    if r.has("dataset_name"):
        _not_a_file(r)
        return [Source(str(r.value("dataset_name")), train_split,
                       subset if isinstance(subset, str) else None, None,
                       r.origin("dataset_name"))], "dataset_name"
    raise not_this_tool(r.draft.source, ("model_name_or_path",), "no dataset_name (or "
                        "dataset_mixture): the config names no training data",
                        "TRL's ScriptArguments name the data with dataset_name; the "
                        "alignment-handbook's recipes with dataset_mixture")


PACKAGED = ("json", "csv", "parquet", "text", "arrow")
"""datasets' packaged builders, which read the files ``data_files`` names."""


def _not_a_file(r: Reader) -> None:
    """``dataset_name`` naming a data file: TRL passes it to ``datasets.load_dataset`` as a
    hub id or folder, and a file is neither (the run would fail at start-up)."""
    name = str(r.value("dataset_name"))
    if name.lower().endswith(DATA_SUFFIXES) and not (local_path(name, r.draft) or
                                                     Path(name)).is_dir():
        raise unsupported(r.draft.source, (r.key("dataset_name") or "dataset_name",),
                          f"dataset_name {name}: TRL loads dataset_name with "
                          "datasets.load_dataset as a hub dataset or a folder, which refuses "
                          "a data file",
                          f"name the file as TRL reads it: datasets: [{{path: "
                          f"{_builder(name)}, data_files: {name}}}]")


def _builder(name: str) -> str:
    suffix = name.lower().removesuffix(".gz").rsplit(".", 1)[-1]
    return {"jsonl": "json", "tsv": "csv", "txt": "text"}.get(suffix, suffix)


def trl_datasets(r: Reader) -> list[Source]:
    """TRL's ``datasets: [{path, name, data_dir, data_files, split, columns, fraction}]``
    (``DatasetMixtureConfig``, passed to ``datasets.load_dataset`` entry by entry and
    concatenated): a packaged builder's one file or a hub dataset per entry; what the spec
    cannot say is refused at its key."""
    d, out = r.draft, []
    if r.has("dataset_name"):
        r.value("dataset_name")
        d.warn((r.key("dataset_name") or "dataset_name",), "dataset_name: TRL's sft script "
               "loads `datasets` when both are given and ignores dataset_name: not imported")
    for i, entry in enumerate(r.value("datasets")):
        at: KeyPath = ("datasets", i)
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise unsupported(d.source, at, f"datasets[{i}] has no path (the dataset's hub "
                              "name, folder, or a builder such as json with data_files)",
                              "write datasets: [{path: json, data_files: FILE}]")
        for key in ("data_dir", "fraction"):
            if entry.get(key) is not None:
                raise unsupported(d.source, at + (key,), f"datasets[{i}].{key}: not "
                                  "imported (the spec reads one file or hub dataset per "
                                  "entry, whole)", f"remove {key}, or write the spec's data "
                                  "section by hand")
        files = entry.get("data_files")
        if isinstance(files, list) and len(files) == 1:
            files = files[0]
        if isinstance(files, dict) and list(files) == ["train"]:
            files = files["train"]
        name, origin = entry["path"], d.origin_of(at + ("path",))
        if files is not None:
            if not isinstance(files, str):
                raise unsupported(d.source, at + ("data_files",), f"datasets[{i}]."
                                  "data_files names several files: the spec reads one file "
                                  "per dataset", "give each file its own datasets entry")
            if entry["path"] not in PACKAGED:
                raise unsupported(d.source, at + ("data_files",), f"datasets[{i}]."
                                  f"data_files with path {entry['path']}: the spec reads a "
                                  "whole hub dataset or one file", "give the file with "
                                  f"path: {_builder(files)}, or the hub dataset alone")
            name, origin = files, d.origin_of(at + ("data_files",))
        elif entry["path"] in PACKAGED:
            raise unsupported(d.source, at + ("path",), f"datasets[{i}].path "
                              f"{entry['path']} reads the files data_files names, and "
                              "there are none", "add data_files: FILE")
        columns = entry.get("columns")
        out.append(Source(str(name), str(entry.get("split", "train")), entry.get("name"),
                          None, origin, tuple(str(c) for c in columns)
                          if isinstance(columns, list) else None))
    return out


def import_data(r: Reader) -> None:
    """``data``: the training datasets (``trl_mixture``), validation, length, packing."""
    d = r.draft
    if r.fms:
        _fms_data(r)
        return
    subset = r.value("dataset_config")
    configs = r.value("dataset_configs")
    if isinstance(configs, list) and configs:
        subset = configs[0]
    splits = r.value("dataset_splits")
    train_split = str(splits[0] if isinstance(splits, list) and splits else
                      r.value("dataset_train_split", SCRIPT_DEFAULTS))
    test_split = str(splits[1] if isinstance(splits, list) and len(splits) > 1 else
                     r.value("dataset_test_split", SCRIPT_DEFAULTS))
    split_at = r.origin("dataset_splits" if splits else "dataset_train_split")
    sources, key = _sources(r, train_split, subset)
    local = local_path(sources[0].name, d)
    columns = first_row_columns(local) if local is not None else None
    sniffed = format_of_columns(columns)
    fmt_at = (f"the columns of {local}'s first row (TRL picks the format by them)" if sniffed
              else "chat: the config sets a chat template / chat data"
              if _format(r) == "chat" else
              "TRL detects the format from the columns at run time: assumed text "
              "(dataset_text_field); check data.train.format")
    first = sources[0]
    if len(sources) == 1 and first.weight in (None, 1.0):
        d.put(("data", "train"), _dataset(r, first, first.split), first.origin)
        d.origins[("data", "train", "split")] = split_at if key not in (MIXTURE, "datasets") \
            else first.origin
        d.origins[("data", "train", "format")] = fmt_at
        if "train_on_input" in d.data["data"]["train"]:
            d.origins[("data", "train", "train_on_input")] = _mask_origin(r)
        if first.weight is not None:
            d.origins[("data", "train", "uri")] = f"{first.origin} (weight 1.0)"
    elif all(s.weight in (None, 1.0) for s in sources):  # every row of each, concatenated
        d.put(("data", "mixture", "strategy"), "concatenate", f"{r.origin(key)} (the "
              "handbook concatenates the datasets, each whole at weight 1.0)")
        d.put(("data", "mixture", "datasets"), [_dataset(r, s, s.split) for s in sources],
              r.origin(key))
    else:
        total = sum(s.weight or 1.0 for s in sources)
        rows = []
        for src in sources:
            row = _dataset(r, src, src.split)
            row["proportion"] = round((src.weight or 1.0) / total, 6)
            rows.append(row)
        rows[-1]["proportion"] = round(1 - sum(row["proportion"] for row in rows[:-1]), 6)
        d.put(("data", "mixture", "datasets"), rows, r.origin(key))
        if len(sources) > 1:
            warn_shares(d, key, sources)
        else:
            d.warn((key,), f"weight {first.weight}: the handbook trains on that fraction of "
                   "the rows; the spec reads every row")
    if key == MIXTURE:
        extra_columns(d, sources)
        mixture_seed(r)
    if key == MIXER and not sniffed and not r.has("chat_template") \
            and r.value("assistant_only_loss") is not True:
        d.warn((MIXER,), "dataset_mixer without a chat_template: imported as chat rows (a "
               "messages column rendered by the tokenizer's chat template), as the handbook's "
               "run_sft.py reads them; its continued-pretraining script run_cpt.py trains the "
               "text column (text_column) of the same recipes' datasets, always packed: for "
               "such a recipe set data.train.format: text, text_field: text and "
               "data.packed: true")
    if _format(r) == "text" and not r.has("dataset_text_field") and not sniffed:
        d.warn((key,), "TRL picks the columns (messages, prompt/completion, text) "
               "when it loads the data; imported as format text" if columns is None else
               f"{local}'s first row has the columns {', '.join(columns) or '(none)'}, none of "
               "which TRL trains on (messages, prompt/completion, text): its run stops there; "
               "imported as format text (set data.train.format and its fields to the rows' "
               "shape)")
    evaluates = str(r.value("eval_strategy", r.sft)) != "no" or r.value("do_eval") is True
    if key == MIXTURE:
        if not mixture_validation(r, evaluates) and evaluates:
            d.put(("training", "evaluation", "strategy"), "no",
                  f"{r.origin(MIXTURE)}: no evaluation data the spec can name")
            r.used.update({"eval_strategy", "do_eval", "per_device_eval_batch_size"})
    elif evaluates:
        d.put(("data", "validation"), _dataset(r, first, test_split), first.origin)
        d.origins[("data", "validation", "split")] = r.origin(
            "dataset_splits" if splits else "dataset_test_split")
    r.put(("data", "max_seq_len"), "max_length", r.sft)
    r.put(("data", "packed"), "packing", r.sft)
    workers = r.value("dataloader_num_workers")
    if isinstance(workers, int):
        d.put(("data", "num_workers"), workers, r.origin("dataloader_num_workers"))
    _dataset_kwargs(r)
    _eos_token(r)


def _dataset_kwargs(r: Reader) -> None:
    """``dataset_kwargs``: TRL 0.15 and later read only ``skip_prepare_dataset`` from it
    (``SFTTrainer``); ``add_special_tokens`` / ``append_concat_token``, which the handbook's
    recipes still set, were read by TRL 0.14 and older."""
    kwargs = r.value("dataset_kwargs")
    if not isinstance(kwargs, dict):
        return
    ignored = sorted(str(k) for k in kwargs if k != "skip_prepare_dataset")
    if ignored:
        r.draft.warn(("dataset_kwargs",), f"dataset_kwargs {', '.join(ignored)}: read by TRL "
                     "0.14 and older only; TRL 0.15 and later ignore them, so they change "
                     "nothing: not imported")
    if kwargs.get("skip_prepare_dataset") is True:
        r.draft.warn(("dataset_kwargs", "skip_prepare_dataset"), "skip_prepare_dataset: TRL "
                     "takes the rows as already tokenized; ftspec tokenizes them from the "
                     "spec's format: not imported")


def _eos_token(r: Reader) -> None:
    """``eos_token``: TRL makes it the tokenizer's end token, appends it to text and
    completion rows (a chat row ends as its template writes it) and saves the tokenizer so."""
    eos = r.value("eos_token")
    if eos is None:
        return
    fmt = r.draft.get(("data", "train", "format"))
    trains = ("chat rows end as the chat template writes them, so the same tokens train"
              if fmt == "chat" else "text and completion rows end with the tokenizer's own "
              "end token instead, which trains differently")
    r.draft.warn(("eos_token",), f"eos_token {eos!r}: TRL makes it the tokenizer's end token "
                 f"(saved with the model); the spec keeps the tokenizer's own: {trains}; "
                 "not imported")


def _fms_data(r: Reader) -> None:
    d = r.draft
    for key, part in (("training_data_path", "train"), ("validation_data_path", "validation")):
        path = r.value(key)
        if not isinstance(path, str):
            if part == "train":
                raise not_this_tool(d.source, ("model_name_or_path",), "no training_data_path: "
                                    "the config names no training data",
                                    "fms-hf-tuning reads training_data_path")
            continue
        at = r.origin(key)
        d.put(("data", part, "uri"), hub_or_file_uri(path if path.startswith(("/", ".")) else "./" + path),
              at)
        d.put(("data", part, "format"), "text", "fms-hf-tuning trains on one text field")
        r.put(("data", part, "text_field"), "dataset_text_field")
        r.put(("data", part, "response_template"), "response_template")
    r.put(("data", "max_seq_len"), "max_length", r.sft)
    r.put(("data", "packed"), "packing", r.sft)
