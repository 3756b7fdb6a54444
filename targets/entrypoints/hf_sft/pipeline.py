"""The data pipeline: sources -> rendered examples (mixed, split) -> features."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from ftspec.targets.entrypoints.hf_sft.features import Feature, pack, tokenize
from ftspec.targets.entrypoints.hf_sft.mixing import interleave, split_off
from ftspec.targets.entrypoints.hf_sft.render import Example, render
from ftspec.targets.entrypoints.hf_sft.sources import (
    Source,
    read_rows,
    train_sources,
    validation_source,
)


@dataclass(frozen=True)
class Data:
    train: list[Feature]
    eval: list[Feature]
    notes: tuple[str, ...] = ()
    """Lines for the log (sizes, mixture shares, examples without the response template)."""


Tagged = tuple[Example, Source]


def load_examples(args: argparse.Namespace, tokenizer: Any = None) -> list[Example]:
    """The training examples as (prompt, completion) text, before any validation split."""
    return [example for example, _ in load_tagged(args, tokenizer)]


def load_tagged(args: argparse.Namespace, tokenizer: Any = None) -> list[Tagged]:
    """Training examples, each with the source it came from (mixed by proportion)."""
    sources = train_sources(args)
    parts = [[(e, s) for e in render(read_rows(s), s, tokenizer)] for s in sources]
    for s, part in zip(sources, parts):
        if not part:
            raise SystemExit(f"{s.source}: no examples")
    if len(parts) == 1:
        return parts[0]
    mixed: list[Tagged] = interleave(parts, _proportions(sources), args.mixture_strategy,
                                     int(args.seed))
    return mixed


def build_data(args: argparse.Namespace, tokenizer: Any) -> Data:
    tagged = load_tagged(args, tokenizer)
    val = validation_source(args)
    if val is not None:
        held = [(e, val) for e in render(read_rows(val), val, tokenizer)]
    else:
        tagged, held = split_off(tagged, args.validation_split_ratio, args.seed)
    train, unmarked = _features(tagged, tokenizer, args.max_seq_length)
    ev, _ = _features(held, tokenizer, args.max_seq_length)
    if args.packing:
        train, ev = pack(train, args.max_seq_length), pack(ev, args.max_seq_length)
    notes = [f"train_examples={len(train)} eval_examples={len(ev)}"]
    if unmarked:
        notes.append(f"warning: {unmarked} training examples lack their response template; "
                     "they add no loss")
    return Data(train, ev, tuple(notes))


def _features(tagged: list[Tagged], tokenizer: Any, max_len: int) -> tuple[list[Feature], int]:
    rows: list[Feature] = []
    unmarked = 0
    for example, src in tagged:  # each example masked by its own source's options
        f = tokenize([example], tokenizer, max_len, src.train_on_input, src.response_template)
        rows += f.rows
        unmarked += f.unmarked
    return rows, unmarked


def _proportions(sources: list[Source]) -> list[float]:
    if any(s.proportion is None for s in sources):
        raise SystemExit("--mixture: every source needs a proportion")
    return [float(s.proportion or 0.0) for s in sources]
