"""Where training rows come from: a local JSONL / JSON / Parquet file or a Hub dataset, and
how they render.

A ``Source`` is one dataset plus its rendering options: one JSON object of prepare.json
(``source`` is ``hf://org/name`` or a local path; the other keys as in ``Source``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

HUB_PREFIX = "hf://"


@dataclass(frozen=True)
class Source:
    source: str
    """``hf://org/name`` for a Hub dataset, else a local JSONL / JSON / Parquet file."""
    split: str = "train"
    subset: str | None = None
    format: str = "instruct"
    column_map: dict[str, str] = field(default_factory=dict)
    prompt_template: str | None = None
    completion_template: str | None = None
    prompt_func: str | None = None
    completion_func: str | None = None
    text_field: str = "text"
    as_chat: bool = False
    """instruct: the row as a user / assistant conversation, rendered like chat."""
    conversation_column: str = "messages"
    conversation_style: str | None = None
    """chat: ``sharegpt`` (from/value) or ``openai`` (role/content); None: either, per turn."""
    chat_layout: str | None = None
    """chat: tokenize as torchtune does with this named template (``chat_tokens``); None:
    the tokenizer's Jinja chat template, masked by TRL (``assistant_only_loss``)."""
    max_seq_len: int | None = None
    """chat_layout: torchtune's truncation length."""
    new_system_prompt: str | None = None
    response_template: str | None = None
    train_on_input: bool = False
    proportion: float | None = None
    image_field: str = "images"
    """multimodal: the column with the row's image(s)."""
    image_dir: str | None = None
    """multimodal: folder of relative image paths; None: the data file's folder."""
    image_tag: str | None = None
    """multimodal: the placeholder in user text where an image goes."""

    @property
    def hub_name(self) -> str | None:
        return self.source[len(HUB_PREFIX):] if self.source.startswith(HUB_PREFIX) else None


SOURCE_KEYS = frozenset(f.name for f in fields(Source))


def source_from_json(entry: dict[str, Any], where: str) -> Source:
    """One source object of prepare.json (``source`` plus its non-default keys)."""
    unknown = sorted(set(entry) - SOURCE_KEYS)
    if unknown:
        raise SystemExit(f"{where}: unknown keys {unknown} (known: {sorted(SOURCE_KEYS)})")
    if "source" not in entry:
        raise SystemExit(f"{where}: needs a 'source' (hf://org/name or a file)")
    return Source(**entry)


def read_rows(src: Source) -> list[tuple[str, dict[str, Any]]]:
    """Every row of the source with where it came from (``file:line``,
    ``file#i`` or ``hub[split]#i``)."""
    hub = src.hub_name
    if hub is not None:
        return _hub_rows(hub, src)
    path = Path(src.source)
    if not path.is_file():
        raise SystemExit(f"{path}: no such data file")
    if path.suffix == ".parquet":
        return _parquet_rows(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json" and text.lstrip().startswith("["):
        return [(f"{path}#{i}", row) for i, row in enumerate(json.loads(text))]
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append((f"{path}:{lineno}", json.loads(line)))
            except json.JSONDecodeError as err:
                raise SystemExit(f"{path}:{lineno}: not JSON: {err}") from None
    return rows


def _datasets(what: str) -> Any:
    try:
        import datasets
    except ImportError:
        raise SystemExit(f"reading {what} needs the `datasets` package "
                         "(pip install 'ftspec[accelerate]')") from None
    return datasets


def _hub_rows(name: str, src: Source) -> list[tuple[str, dict[str, Any]]]:
    ds = _datasets("a hub dataset").load_dataset(name, src.subset, split=src.split)
    return [(f"{name}[{src.split}]#{i}", dict(row)) for i, row in enumerate(ds)]


def _parquet_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """A Parquet file by ``datasets``' own parquet builder; its ``Image`` columns stay
    undecoded (``{"bytes", "path"}``), as the multimodal rows hand them on."""
    datasets = _datasets("a Parquet file")
    try:
        ds = datasets.load_dataset("parquet", data_files=str(path), split="train")
    except Exception as err:  # noqa: BLE001 - pyarrow's and datasets' errors, reported by file
        raise SystemExit(f"{path}: not a readable Parquet file: {err}") from None
    for name, feature in ds.features.items():
        if isinstance(feature, datasets.Image):
            ds = ds.cast_column(name, datasets.Image(decode=False))
        elif isinstance(feature, datasets.List | datasets.Sequence) and isinstance(
                feature.feature, datasets.Image):
            ds = ds.cast_column(name, datasets.List(datasets.Image(decode=False)))
    return [(f"{path}#{i}", dict(row)) for i, row in enumerate(ds)]
