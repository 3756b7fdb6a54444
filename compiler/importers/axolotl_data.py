"""The data half of ``ftspec import axolotl``: ``datasets`` entries, sequence length, packing,
the validation split; and the ``fsdp`` / ``fsdp_config`` / ``deepspeed`` keys."""

from __future__ import annotations

from typing import Any

from ftspec.compiler.importers import rows
from ftspec.compiler.importers.axolotl_defaults import (
    DEEPSPEED,
    FSDP_STATE,
    FSDP_WRAP,
)
from ftspec.compiler.importers.axolotl_fsdp import DROPPED, put_dropped, put_run_defaults
from ftspec.compiler.importers.base import layer_class_names
from ftspec.compiler.importers.deepspeed_names import put_deepspeed
from ftspec.compiler.importers.flat import put_data
from ftspec.compiler.importers.no_effect import AXOLOTL_DATASET
from ftspec.compiler.importers.trl_reader import Reader, hub_or_file_uri

ENTRY_KEYS = {"path", "type", "split", "name", "field_messages", "message_property_mappings",
              "message_field_role", "message_field_content", "roles", "field",
              "roles_to_train", "train_on_eos"}
"""``datasets`` entry keys the import reads; any other is a warning at its line."""
OPENAI_ROLES = {"user": ["user"], "assistant": ["assistant"]}


def _uri(path: str) -> str:
    local = path.startswith(("/", "./", "../", "~")) or path.endswith((".json", ".jsonl",
                                                                       ".parquet", ".csv"))
    return hub_or_file_uri(path if not local or path.startswith(("/", ".", "~"))
                           else "./" + path)


def _entry(r: Reader, i: int, ds: dict[str, Any]) -> dict[str, Any] | None:
    d, at = r.draft, ("datasets", i)
    path = ds.get("path")
    if not isinstance(path, str):
        d.warn(at, "dataset without a path: not imported")
        return None
    uri, kind = _uri(path), ds.get("type")
    if kind == "alpaca":
        entry = rows.alpaca(uri)
    elif kind == "chat_template":
        entry = rows.chat(uri, str(ds.get("field_messages", "messages")),
                          _turn_style(r, at, ds))
        if ds.get("roles") not in (None, OPENAI_ROLES):
            d.warn(at + ("roles",), "roles other than user/assistant have no spec field")
        _chat_mask(r, at, ds)
    elif isinstance(kind, str) and kind.startswith("sharegpt"):
        entry = rows.chat(uri, "conversations", "sharegpt")
    elif kind == "completion":
        entry = rows.text(uri, str(ds.get("field", "text")))
    else:
        d.warn(at + ("type",) if "type" in ds else at, f"dataset type {kind!r}: no spec "
               "format; imported as text, set data.train.format by hand")
        entry = rows.text(uri)
    if isinstance(ds.get("split"), str) and ds["split"] != "train":
        entry["split"] = ds["split"]
    if isinstance(ds.get("name"), str):
        entry["subset"] = ds["name"]
    for key, value in ds.items():
        if key == "drop_system_message" and kind == "chat_template":
            if value is True:
                d.warn(at + (key,), f"datasets[{i}].drop_system_message true: axolotl drops "
                       "each conversation's leading system message; the import keeps it in "
                       "the (untrained) context, so the prompts differ and a chat template "
                       "without a system role (Gemma's) refuses those rows (no spec field)")
        elif key == "data_files" and value:
            d.warn(at + (key,), f"datasets[{i}].data_files: axolotl reads only these files "
                   f"of {ds.get('path')}; the spec has no field for them, so the run reads "
                   "the repository's whole split: other rows, likely many more (point "
                   "data.train.uri at the files instead)")
        elif key in AXOLOTL_DATASET:
            d.no_effect(at + (key,))
        elif key not in ENTRY_KEYS:
            d.warn(at + (key,), f"datasets[{i}].{key} has no spec field: not imported")
    return entry


SHAREGPT_KEYS = {"role": "from", "content": "value"}


def _turn_style(r: Reader, at: tuple[str | int, ...], ds: dict[str, Any]) -> str:
    """The keys of each turn (``message_property_mappings``, or the deprecated
    ``message_field_role`` / ``message_field_content``; axolotl's default role/content):
    from/value is the spec's ShareGPT style (axolotl's default ``roles`` read human / gpt /
    system as the spec's sharegpt does); any other mapping is a warning."""
    mapping = ds.get("message_property_mappings")
    key = "message_property_mappings"
    if mapping is None:
        mapping = {part: ds[old] for part, old in (("role", "message_field_role"),
                                                   ("content", "message_field_content"))
                   if isinstance(ds.get(old), str)}
        key = "message_field_role" if "message_field_role" in ds else "message_field_content"
    full = {"role": "role", "content": "content"} | (mapping if isinstance(mapping, dict) else {})
    if full == SHAREGPT_KEYS:
        return "sharegpt"
    if full != {"role": "role", "content": "content"}:
        r.draft.warn(at + (key,), f"turn keys {full}: the spec reads role/content (openai) or "
                     "from/value (sharegpt) turns; imported as role/content: set "
                     "data.train.column_map by hand")
    return "openai"


def _chat_mask(r: Reader, at: tuple[str | int, ...], ds: dict[str, Any]) -> None:
    """axolotl's chat_template loss mask (prompt_strategies/chat_template.py's StrategyLoader:
    ``roles_to_train`` ["assistant"], ``train_on_eos`` "turn") is the spec's
    ``train_on_input: false`` (each assistant turn and its end-of-turn token); any other
    choice is a warning at its key, saying what trains differently."""
    d = r.draft
    roles = ds.get("roles_to_train", ["assistant"])
    if isinstance(roles, list) and set(roles) != {"assistant"}:
        d.warn(at + ("roles_to_train",), f"roles_to_train {roles}: the spec trains the "
               "assistant turns (train_on_input: false) or every token (train_on_input: "
               "true); imported as the assistant turns, so the other roles' turns are not "
               "trained")
    eos = ds.get("train_on_eos", "turn")
    if eos != "turn":
        d.warn(at + ("train_on_eos",), f"train_on_eos {eos!r}: the spec trains each assistant "
               "turn's end-of-turn token (axolotl's \"turn\"); imported as that")


PRETRAINING = "pretraining_dataset"


def _pretraining(r: Reader) -> None:
    """``pretraining_dataset`` (used when ``datasets`` is absent): axolotl streams the first
    entry's ``text_column`` (default text; ``utils/data``: ``cfg.pretraining_dataset[0]``,
    the others unread), every token trained, packed to ``sequence_len``, for ``max_steps``.
    The spec reads the dataset whole: the rows a run sees, and their order, differ
    (warned)."""
    d, sets = r.draft, r.value(PRETRAINING)
    entries = []
    for i, ds in enumerate(sets):
        at = (PRETRAINING, i)
        if i > 0:
            d.warn(at, f"{PRETRAINING}[{i}]: axolotl streams the first entry only; not "
                   "imported")
            continue
        if not isinstance(ds, dict) or not isinstance(ds.get("path"), str):
            d.warn(at, f"{PRETRAINING}[{i}] without a path: not imported")
            continue
        entry = rows.text(_uri(ds["path"]), str(ds.get("text_column") or "text"))
        if isinstance(ds.get("split"), str) and ds["split"] != "train":
            entry["split"] = ds["split"]
        if isinstance(ds.get("name"), str):
            entry["subset"] = ds["name"]
        entry["train_on_input"] = True  # documents: every token trains
        entries.append(entry)
        for key in ds:
            if key not in ("path", "name", "split", "text_column", "type"):
                d.warn(at + (key,), f"{PRETRAINING}[{i}].{key} has no spec field: not imported")
    d.warn((PRETRAINING,), f"{PRETRAINING}: axolotl streams the rows through a shuffle "
           "buffer for max_steps; the spec loads the dataset whole and shuffles all of it: "
           "the rows trained and their order differ (the loss and the update rule are the "
           "same)")
    r.value("train_on_inputs")  # text rows train every token either way
    put_data(r, entries, PRETRAINING, "", "val_set_size")


def data(r: Reader) -> None:
    if not r.has("datasets") and isinstance(r.value(PRETRAINING), list):
        _pretraining(r)
        return
    sets = r.value("datasets")
    entries = [e for i, ds in enumerate(sets) if isinstance(ds, dict)
               for e in [_entry(r, i, ds)] if e is not None]
    train_on_input = r.value("train_on_inputs", r.sft) is True
    for entry in entries:
        entry["train_on_input"] = train_on_input  # explicit: a format may default to true
    put_data(r, entries, "datasets", "axolotl concatenates and shuffles them", "val_set_size")


def distributed(r: Reader) -> None:
    d = r.draft
    if r.has("deepspeed"):
        put_deepspeed(d, ("deepspeed",), r.value("deepspeed"), DEEPSPEED, "axolotl")
    if not r.has("fsdp") and not r.has("fsdp_config"):
        return
    modes, cfg = r.value("fsdp") or [], r.value("fsdp_config") or {}
    at = r.origin("fsdp" if r.has("fsdp") else "fsdp_config")
    f = ("distributed", "fsdp")
    d.put(("distributed", "strategy"), "fsdp", at)
    # axolotl's validation moves fsdp_config.fsdp_version / version to the top-level key
    top = r.value("fsdp_version")
    version = int(top if top is not None else cfg.get("fsdp_version", cfg.get("version", 1)))
    d.put(f + ("version",), version, r.origin("fsdp_version") if top is not None else
          at + " (fsdp_version; axolotl's default 1)")
    mapped: dict[str, tuple[str, dict[str, Any] | None]] = {
        "auto_wrap_policy": ("auto_wrap", FSDP_WRAP),
        "state_dict_type": ("state_dict_type", FSDP_STATE),
        "offload_params": ("cpu_offload", None),
        "transformer_layer_cls_to_wrap": ("transformer_layer_cls", None),
        "use_orig_params": ("use_orig_params", None),
        "sync_module_states": ("sync_module_states", None),
        "cpu_ram_efficient_loading": ("cpu_ram_efficient_loading", None),
        "reshard_after_forward": ("reshard_after_forward", None),
    }
    """axolotl's ``fsdp_config`` keys (its schema's names; the ``fsdp_`` prefix older configs
    write is deprecated and stripped by axolotl's validation) -> the spec's."""
    for key, value in cfg.items():
        where = ("fsdp_config", key)
        if key in ("fsdp_version", "version"):
            continue
        spec_key, table = mapped.get(key.removeprefix("fsdp_"), ("", None))
        value = table.get(str(value)) if table is not None else value
        if key.removeprefix("fsdp_") == "activation_checkpointing":
            _fsdp_checkpointing(r, where, value)
            continue
        if key.removeprefix("fsdp_") in DROPPED:
            put_dropped(r, where, key.removeprefix("fsdp_"), value, version)
            continue
        if not spec_key or value is None:
            d.warn(where, f"fsdp_config.{key} has no spec field: not imported")
            continue
        if spec_key == "transformer_layer_cls" and layer_class_names(value) != value:
            d.put(f + (spec_key,), layer_class_names(value), f"{d.origin_of(where)} (the "
                  "class name: accelerate matches names, not import paths)")
            continue
        d.put(f + (spec_key,), value, d.origin_of(where))
    put_run_defaults(r, version)
    if "full_shard" not in modes and modes:
        d.warn(("fsdp",), f"fsdp {modes}: imported as full_shard (the spec's sharding comes "
               "from fsdp_config.fsdp_sharding_strategy)")
    if "offload" in modes:
        d.put(f + ("cpu_offload",), True, d.origin_of(("fsdp",)))


def _fsdp_checkpointing(r: Reader, where: tuple[str, ...], value: Any) -> None:
    """FSDP's activation checkpointing recomputes each wrapped layer in backward, as the
    spec's ``training.gradient_checkpointing`` does (the same gradients)."""
    d = r.draft
    if value is True and r.value("gradient_checkpointing", r.sft) is not True:
        d.put(("training", "gradient_checkpointing"), True, d.origin_of(where) + " (FSDP's "
              "activation checkpointing recomputes each decoder layer)")
