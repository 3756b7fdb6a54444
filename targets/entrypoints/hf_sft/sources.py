"""Where training rows come from: a local JSONL file or a Hub dataset, and how they render.

A ``Source`` is one dataset plus its rendering options. The single-source flags
(``--train_file`` / ``--dataset_name`` ...) make one; each ``--mixture`` entry is a JSON
object with the same keys (``source`` is ``hf://org/name`` or a local path).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field, fields, replace
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
    conversation_column: str = "messages"
    new_system_prompt: str | None = None
    response_template: str | None = None
    train_on_input: bool = False
    proportion: float | None = None

    @property
    def hub_name(self) -> str | None:
        return self.source[len(HUB_PREFIX):] if self.source.startswith(HUB_PREFIX) else None


SOURCE_KEYS = frozenset(f.name for f in fields(Source))


def train_sources(args: argparse.Namespace) -> list[Source]:
    """The training sources named on the command line (one, or a mixture's entries)."""
    base = _base(args)
    if args.mixture is None:
        return [base]
    return [source_from_json(entry, base, f"--mixture[{i}]")
            for i, entry in enumerate(args.mixture)]


def validation_source(args: argparse.Namespace) -> Source | None:
    """The validation source, rendered like the (first) training source unless given whole."""
    base = train_sources(args)[0]
    if args.validation_source is not None:
        return source_from_json(args.validation_source, base, "--validation_source")
    split = args.validation_split or "validation"
    if args.validation_file is not None:
        return replace(base, source=str(args.validation_file), split=split, proportion=None)
    if args.validation_dataset_name is not None:
        return replace(base, source=HUB_PREFIX + args.validation_dataset_name, split=split,
                       proportion=None)
    if args.validation_split is not None:
        if base.hub_name is None:
            raise SystemExit("--validation_split needs a hub dataset (--dataset_name)")
        return replace(base, split=split, proportion=None)
    return None


def source_from_json(entry: dict[str, Any], base: Source, where: str) -> Source:
    unknown = sorted(set(entry) - SOURCE_KEYS)
    if unknown:
        raise SystemExit(f"{where}: unknown keys {unknown} (known: {sorted(SOURCE_KEYS)})")
    if "source" not in entry:
        raise SystemExit(f"{where}: needs a 'source' (hf://org/name or a file)")
    return replace(base, **entry)


def _base(args: argparse.Namespace) -> Source:
    if args.dataset_name is not None:
        where = HUB_PREFIX + args.dataset_name
    else:
        where = str(args.train_file) if args.train_file is not None else ""
    return Source(
        source=where, split=args.train_split, subset=args.dataset_subset,
        format=args.dataset_format, column_map=dict(args.column_map),
        prompt_template=args.prompt_template, completion_template=args.completion_template,
        prompt_func=args.prompt_func, completion_func=args.completion_func,
        text_field=args.dataset_text_field, conversation_column=args.conversation_column,
        new_system_prompt=args.new_system_prompt, response_template=args.response_template,
        train_on_input=args.train_on_input)


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
