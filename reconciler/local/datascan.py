"""Every row of a local dataset checked for the values its ``format`` needs.

``plan --check-data`` reports each row whose needed column (the Job's row format,
``ftspec.spec.rows``: the one table of what a format reads) is missing, null or of the wrong type: the launchers find
such a row only when a step reaches it, minutes into a run, with an error that names neither
the row nor the column (torchtune: ``content must be of type List[Dict[str, Any]], got
None``). The same check locates a failed run's data error (``reconciler.data_errors``) at
its row, column and spec field (``locate``); the default plan checks the first rows only
(``datapeek``).

Read here: JSON Lines (streamed line by line), a JSON array, CSV/TSV (streamed); other
loaders (parquet, arrow, text) are left to the launcher and said so. Hand-written for the
reason ``datapeek`` is: ``datasets`` reads and caches the whole file through Arrow, costs
seconds to import, and reports a bad value without its row.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.reconciler.data_errors import data_error
from ftspec.reconciler.local.datapeek import kind_of
from ftspec.spec.diagnostics import KeyPath, format_path
from ftspec.spec.ir import DatasetRows, Job
from ftspec.spec.model.data import Dataset
from ftspec.spec.rows import dataset_rows
from ftspec.spec.rules.data import datasets
from ftspec.spec.urls import scheme
from ftspec.targets.paths import local_path

MAX_PROBLEMS = 10
"""Problems kept per dataset (the rest are counted)."""
ARRAY_BYTES = 256 << 20
"""A JSON array is parsed whole; larger ones are not scanned here."""
LOCATE_BYTES = 64 << 20
"""``status`` of a failed run counts the other rows like the one it names in datasets up to
this size; in larger ones it stops at the first (a few seconds per 64 MiB here)."""


@dataclass(frozen=True)
class RowProblem:
    row: int
    """1-based, in file order (the header of a CSV file is not a row)."""
    line: int | None
    """The line it starts on (JSON Lines, CSV), None in a JSON array."""
    column: str
    field: KeyPath
    """The spec field that asks for the column, relative to the dataset."""
    problem: str
    """``is null``, ``is missing``, ``is a number, not text``, ..."""
    value: str | None = None
    """The offending value as Python prints it (what a launcher's message quotes)."""

    def to_json(self, file: str, base: KeyPath, more: int = 0) -> dict[str, Any]:
        """Where it is, for ``failure.data_text``: ``file`` as the spec names it, ``base``
        the dataset's spec field."""
        return {"file": file, "row": self.row, "line": self.line, "column": self.column,
                "field": format_path((*base, *self.field)), "problem": self.problem,
                "more_rows": more}


@dataclass(frozen=True)
class Scan:
    checked: bool
    """False: a file kind not read here (nothing was scanned)."""
    rows: int = 0
    problems: list[RowProblem] = field(default_factory=list)
    more: int = 0
    """Problems found beyond ``MAX_PROBLEMS``."""
    unreadable: str | None = None
    """Why the file stopped parsing (with where), if it did."""


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "text" if isinstance(value, str) else type(value).__name__


def needs(rows: DatasetRows) -> dict[str, tuple[KeyPath, str]]:
    """Column -> (spec field, ``text`` | ``messages`` | ``any``): what each row must hold."""
    return {c.name: (c.field, c.value) for c in rows.columns}


def row_problems(wanted: dict[str, tuple[KeyPath, str]], row: dict[str, Any]
                 ) -> Iterator[tuple[str, KeyPath, str, Any]]:
    """(column, spec field, problem, value) for each needed value ``row`` lacks."""
    for column, (where, kind) in wanted.items():
        if column not in row:
            yield column, where, "is missing", None
            continue
        value = row[column]
        if value is None:
            yield column, where, "is null", None
        elif kind == "text" and not isinstance(value, str):
            yield column, where, f"is {_type_name(value)}, not text", value
        elif kind == "messages" and not (isinstance(value, list)
                                         and all(isinstance(m, dict) for m in value)):
            yield column, where, f"is {_type_name(value)}, not a list of messages", value


def _json_lines(path: Path) -> Iterator[tuple[int, int | None, Any]]:
    row = 0
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            row += 1
            try:
                yield row, number, json.loads(raw)
            except ValueError as exc:
                raise _Unreadable(f"line {number} is not JSON: {exc}") from None


def _json_array(path: Path) -> Iterator[tuple[int, int | None, Any]]:
    try:
        data = json.loads(path.read_bytes())
    except ValueError as exc:
        raise _Unreadable(f"the file is not JSON: {exc}") from None
    if not isinstance(data, list):
        raise _Unreadable(f"the file holds a JSON {type(data).__name__}, not rows")
    for row, value in enumerate(data, 1):
        yield row, None, value


def _delimited(path: Path, delimiter: str) -> Iterator[tuple[int, int | None, Any]]:
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        line = 2  # the first line is the header
        for row, values in enumerate(reader, 1):
            # a short row fills the columns it lacks with None: they are missing, not null
            yield row, line, {k: v for k, v in values.items() if v is not None and k}
            line = reader.line_num + 1


class _Unreadable(Exception):
    pass


def _rows(path: Path, kind: str) -> Iterator[tuple[int, int | None, Any]] | None:
    if kind in ("csv", "tsv"):
        return _delimited(path, "\t" if kind == "tsv" else ",")
    if kind != "json":
        return None
    with path.open("rb") as fh:
        first = fh.read(4096).lstrip()[:1]
    if first == b"[":
        return _json_array(path) if path.stat().st_size <= ARRAY_BYTES else None
    return _json_lines(path)


def scan(path: Path, ds: Dataset,
         keep: Callable[[RowProblem], bool] = lambda p: True,
         limit: int = MAX_PROBLEMS, stop: bool = False,
         layout: DatasetRows | None = None) -> Scan:
    """Every row of ``path`` checked against what ``ds``'s format needs (``layout``: the
    Job's rows of ``ds``, else derived from it); ``keep`` picks the problems kept
    (``locate``: those a failed run's error names); ``stop``: end at the ``limit``-th
    problem (``more`` is then not counted). Raises OSError."""
    kind = kind_of(path, ds.loader)
    rows = _rows(path, kind) if kind is not None else None
    if rows is None:
        return Scan(checked=False)
    wanted = needs(layout or dataset_rows(ds))
    found: list[RowProblem] = []
    more = count = 0
    try:
        for count, line, row in rows:
            if not isinstance(row, dict):
                what = f"is {_type_name(row)}, not an object with one key per column"
                problems: list[tuple[str, KeyPath, str, Any]] = [("", (), what, None)]
            else:
                problems = list(row_problems(wanted, row))
            for column, where, problem, value in problems:
                hit = RowProblem(count, line, column, where, problem,
                                 None if value is None else str(value))
                if not keep(hit):
                    continue
                if len(found) < limit:
                    found.append(hit)
                else:
                    more += 1
            if stop and len(found) >= limit:
                break
    except _Unreadable as exc:
        return Scan(True, count, found, more, unreadable=str(exc))
    return Scan(True, count, found, more)


def locate(reason: dict[str, Any], job: Job, root: Path) -> dict[str, Any] | None:
    """Where a failed run's data error (``reconciler.data_errors``) is: the first row of the
    job's local datasets holding the value it names, as ``reason["data"]`` (``file``,
    ``row``, ``line``, ``column``, ``field``, ``problem``, ``more_rows``); None when the error
    is not a known data error or no row matches."""
    error = data_error(reason.get("exception"))
    if error is None:
        return None
    for base, ds in datasets(job.spec):
        if scheme(ds.uri) != "file":
            continue
        given = local_path(ds.uri)
        path = Path(given) if Path(given).is_absolute() else root / given
        try:
            big = path.is_file() and path.stat().st_size > LOCATE_BYTES
            found = scan(path, ds, keep=lambda p: error.matches(p.problem, p.value, p.column),
                         limit=1, stop=big, layout=job.row_format.at(base)
                         ) if path.is_file() else None
        except OSError:
            continue
        if found is None or not found.problems:
            continue
        return found.problems[0].to_json(given, base, found.more)
    return None
