"""Where an imported model and dataset are, and what the model is.

* **Local or hub** (:func:`source_uri`): a name that starts with ``/``, ``./``, ``../`` or
  ``~``, that names a file or folder existing beside the config (or in the working folder),
  or that ends in a data-file extension is a ``file://`` URI; anything else a hub id.
* **The model** (:func:`put_model_facts`): a local folder's ``config.json`` is read — its
  numbers become ``model.architecture`` (``architectures[0]``'s ``…ForCausalLM`` gives the
  ``…DecoderLayer`` FSDP wraps, transformers' naming); otherwise the catalog family is
  matched by name (:func:`ftspec.compiler.importers.base.family_for_hub_id`: the repo name
  without release tags, precision / quantization tags such as ``-fp16`` or ``-bnb-4bit``,
  and ``-Instruct`` / ``-chat`` / ``-hf`` / ``-base`` / ``-it``; DeepSeek-R1 distills by the
  base their model card names; words after the parameter count, a derivative's, are dropped
  (``Qwen2.5-Math-7B-RoPE-300k``); Qwen2.5's Coder and Math lines are Qwen2.5 at their size);
  a match by a derivative rule is a warning naming the family assumed, and a name that
  matches nothing is a warning that says what ``validate`` needs and why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import SpecDraft, match_family
from ftspec.spec.diagnostics import KeyPath
from ftspec.spec.urls import is_uri

DATA_SUFFIXES = (".json", ".jsonl", ".csv", ".tsv", ".parquet", ".arrow", ".txt",
                 ".json.gz", ".jsonl.gz")
MAX_CONFIG_BYTES = 1 << 20
MAX_ROW_BYTES = 1 << 20


def local_path(name: str, draft: SpecDraft) -> Path | None:
    """The local file or folder ``name`` means, when it is one that exists (relative names
    beside the config first, then in the working folder)."""
    if is_uri(name):
        return None
    candidates = [Path(name).expanduser()]
    if not Path(name).is_absolute():
        candidates.insert(0, Path(draft.source.file).parent / name)
    for path in candidates:
        if path.exists():
            return path
    return None


def source_uri(name: str, draft: SpecDraft) -> str:
    if name.startswith(("/", "./", "../", "~")):
        return "file://" + name
    if local_path(name, draft) is not None or name.lower().endswith(DATA_SUFFIXES):
        return "file://./" + name
    return "hf://" + name


def not_in_catalog(name: str) -> str:
    return (f"{name} is not in ftspec's model catalog, and no local config.json was found: "
            "validate needs model.architecture (num_layers, num_heads, num_kv_heads, "
            "embed_dim, intermediate_dim, vocab_size, max_seq_len from the model's "
            "config.json) to size memory, batch and sharding; or model.family when it is a "
            "re-upload of a catalog model (`ftspec explain --families`)")


def read_config_json(folder: Path) -> dict[str, Any] | None:
    path = folder / "config.json"
    try:
        if not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def architecture(cfg: dict[str, Any]) -> dict[str, Any] | None:
    """``model.architecture`` from a transformers ``config.json`` (None when a number the
    spec needs is missing)."""
    keys = {"num_layers": "num_hidden_layers", "num_heads": "num_attention_heads",
            "embed_dim": "hidden_size", "intermediate_dim": "intermediate_size",
            "vocab_size": "vocab_size", "max_seq_len": "max_position_embeddings"}
    out: dict[str, Any] = {}
    for spec_key, hf_key in keys.items():
        value = cfg.get(hf_key)
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        out[spec_key] = value
    kv = cfg.get("num_key_value_heads")
    out["num_kv_heads"] = kv if isinstance(kv, int) else out["num_heads"]
    head = cfg.get("head_dim")
    if isinstance(head, int) and head != out["embed_dim"] // out["num_heads"]:
        out["head_dim"] = head
    if isinstance(cfg.get("tie_word_embeddings"), bool):
        out["tied_embeddings"] = cfg["tie_word_embeddings"]
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and str(archs[0]).endswith("ForCausalLM"):
        name = str(archs[0])[: -len("ForCausalLM")] + "DecoderLayer"
        if name.isidentifier():
            out["layer_cls"] = name
    return out


def put_model_facts(draft: SpecDraft, name: str, origin: str, warn_at: KeyPath) -> None:
    """``model.family`` or ``model.architecture`` for the model ``name`` (its source key's
    ``origin``); a warning at ``warn_at`` when neither can be known."""
    folder = local_path(name, draft)
    cfg = read_config_json(folder) if folder is not None and folder.is_dir() else None
    arch = architecture(cfg) if cfg is not None else None
    if arch is not None:
        draft.put(("model", "architecture"), arch, f"{origin} (its config.json)")
        return
    found = match_family(name)
    if found is None:
        draft.warn(warn_at, not_in_catalog(name))
    elif found[1]:
        draft.put(("model", "family"), found[0], f"{origin} (catalog)")
    else:
        draft.put(("model", "family"), found[0], f"{origin} (catalog family assumed from the "
                  "name)")
        draft.warn(warn_at, f"{name}: assumed the catalog family {found[0]} (the name "
                   "differs by -instruct / -base, or names a re-upload or distill of it); "
                   "set model.architecture if its numbers differ")


def first_row_columns(path: Path) -> list[str] | None:
    """The columns of a local JSON Lines / JSON dataset's first row (None: not such a file,
    or unreadable)."""
    if not path.is_file() or path.suffix not in (".jsonl", ".json"):
        return None
    try:
        with path.open("rb") as fh:
            head = fh.read(MAX_ROW_BYTES)
        text = head.decode("utf-8", errors="replace").lstrip()
        if text.startswith("["):
            row = json.loads(text) if len(head) < MAX_ROW_BYTES else None
            row = row[0] if isinstance(row, list) and row else None
        else:
            row = json.loads(text.split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    return [str(k) for k in row] if isinstance(row, dict) else None


def sniff_rows(path: Path) -> str | None:
    """The spec format of a local JSON Lines / JSON dataset (``format_of_columns``)."""
    return format_of_columns(first_row_columns(path))


def format_of_columns(columns: list[str] | None) -> str | None:
    """The spec format a first row's columns give: ``messages`` -> chat, ``prompt`` +
    ``completion`` -> prompt_completion, ``text`` -> text."""
    row = columns or []
    if "messages" in row:
        return "chat"
    if "prompt" in row and "completion" in row:
        return "prompt_completion"
    return "text" if "text" in row else None
