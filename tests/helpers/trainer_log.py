"""The Hugging Face / TRL trainer's records in a run's output, through ftspec's own parser."""

from __future__ import annotations

from ftspec.reconciler.progress import Record, parse_line, split_lines


def records(output: str) -> list[Record]:
    return [r for r in map(parse_line, split_lines(output)) if r is not None]


def train_records(output: str) -> list[Record]:
    return [r for r in records(output) if r.loss is not None]


def eval_records(output: str) -> list[Record]:
    return [r for r in records(output) if r.eval_loss is not None]


def summary(output: str) -> Record:
    [final] = [r for r in records(output) if r.final]
    return final
