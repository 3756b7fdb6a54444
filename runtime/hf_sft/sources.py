"""Where training rows come from: a local JSONL file or a Hub dataset, and how they render.

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
    """``hf://org/name`` for a Hub dataset, else a local JSONL / JSON file."""
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
    """Every row of the source with where it came from (``file:line`` or ``hub[split]#i``)."""
    hub = src.hub_name
    if hub is not None:
        return _hub_rows(hub, src)
    path = Path(src.source)
    if not path.is_file():
        raise SystemExit(f"{path}: no such data file")
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


def _hub_rows(name: str, src: Source) -> list[tuple[str, dict[str, Any]]]:
    try:
        import datasets
    except ImportError:
        raise SystemExit("reading a hub dataset needs the `datasets` package "
                         "(pip install 'ftspec[accelerate]')") from None
    ds = datasets.load_dataset(name, src.subset, split=src.split)
    return [(f"{name}[{src.split}]#{i}", dict(row)) for i, row in enumerate(ds)]
