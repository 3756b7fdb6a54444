"""The first rows of a local dataset file, and the columns its ``format`` needs.

Read at plan time (``preflight.py``) so a dataset that cannot train is an error at the spec
field before a launcher starts, not a traceback 40 s into the run. Only the head of the file
is read (``HEAD_BYTES``); JSON Lines, JSON arrays and CSV/TSV headers are understood, other
loaders (parquet, arrow, text) are left to the launcher. Hand-written: ``datasets`` would
read (and cache) the whole file and costs seconds to import.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from ftspec.spec.ir import DatasetRows

HEAD_BYTES = 1 << 20
ROWS = 5
_KINDS = {"jsonl": "json", "ndjson": "json", "json": "json", "csv": "csv", "tsv": "tsv"}


class PeekError(Exception):
    """The head of the file does not parse; the message says where."""


def kind_of(path: Path, loader: str | None = None) -> str | None:
    """``json``, ``csv``, ``tsv`` (read here), another loader's name, or None."""
    return loader or _KINDS.get(path.suffix.lower().lstrip("."))


def first_rows(path: Path, loader: str | None = None) -> list[dict[str, Any]] | None:
    """Up to ``ROWS`` rows as dicts; None when the file's kind is not read here."""
    kind = kind_of(path, loader)
    if kind not in ("json", "csv", "tsv"):
        return None
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
    truncated = len(head) == HEAD_BYTES
    text = head.decode("utf-8", errors="replace")
    if kind in ("csv", "tsv"):
        reader = csv.DictReader(io.StringIO(text), delimiter="\t" if kind == "tsv" else ",")
        if not reader.fieldnames:
            raise PeekError("the file has no header row")
        return [dict.fromkeys(reader.fieldnames, "")]
    stripped = text.lstrip()
    if stripped.startswith("["):
        return _json_array(stripped, truncated)
    return _json_lines(text, truncated)


def _json_lines(text: str, truncated: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    lines = text.split("\n")
    if truncated:
        lines = lines[:-1]  # the last line may be cut off by the read
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise PeekError(f"line {number} is not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise PeekError(f"line {number} is a JSON {type(row).__name__}, not an object "
                            "with one key per column")
        rows.append(row)
        if len(rows) == ROWS:
            break
    if not rows:
        raise PeekError("the file holds no rows")
    return rows


def _json_array(text: str, truncated: bool) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    pos = 1
    rows: list[dict[str, Any]] = []
    while len(rows) < ROWS:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            row, pos = decoder.raw_decode(text, pos)
        except ValueError as exc:
            if truncated:
                break
            raise PeekError(f"row {len(rows) + 1} is not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise PeekError(f"row {len(rows) + 1} is a JSON {type(row).__name__}, not an "
                            "object with one key per column")
        rows.append(row)
    if not rows:
        raise PeekError("the array holds no rows")
    return rows


COUNT_BYTES = 64 << 20
"""Rows are counted in JSON Lines files up to this size (a plan reads the whole file)."""


def count_rows(path: Path, loader: str | None = None) -> int | None:
    """The rows of a JSON Lines file (its non-blank lines) up to ``COUNT_BYTES``; None for
    other kinds and larger files (what the launcher reads there is not counted here)."""
    kind = kind_of(path, loader)
    if kind != "json" or path.stat().st_size > COUNT_BYTES:
        return None
    with path.open("rb") as fh:
        data = fh.read(COUNT_BYTES + 1)
    if data.lstrip()[:1] == b"[":
        return None  # a JSON array: its rows are not lines
    return sum(1 for line in data.split(b"\n") if line.strip())


def needed_columns(rows: DatasetRows) -> dict[str, tuple[str | int, ...]]:
    """Dataset column -> the spec field (relative to the dataset) that asks for it (the
    Job's row format, ``ftspec.spec.rows``)."""
    return {c.name: c.field for c in rows.columns}


def missing_columns(ds: DatasetRows, rows: list[dict[str, Any]]
                    ) -> list[tuple[str, tuple[str | int, ...], int]]:
    """(column, spec field, row number) for each needed column a first row lacks."""
    found = []
    for column, field in needed_columns(ds).items():
        for number, row in enumerate(rows, 1):
            if column not in row:
                found.append((column, field, number))
                break
    return found
