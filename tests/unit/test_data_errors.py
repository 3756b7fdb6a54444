"""A failed run's data error mapped to its row, column and spec field, the scanner of every
row (``plan --check-data``), and the plan-time tokenizer load (issue 36, item 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler.data_errors import DataError, data_error
from ftspec.reconciler.failure import describe, last_exception
from ftspec.reconciler.local.datascan import locate, scan
from ftspec.reconciler.local.tokcheck import tokenizer_problem
from ftspec.spec.model.data import Dataset
from helpers.tinyspec import make_workdir, tiny_job

TORCHTUNE_LOG = """\
Traceback (most recent call last):
  File "/venv/torchtune/data/_messages.py", line 81, in _convert_to_list_of_dict
    assert isinstance(
AssertionError: content must be of type List[Dict[str, Any]], got None
"""


def _exc(type_: str, message: str) -> dict[str, Any]:
    return {"type": type_, "message": message, "file": "x.py", "line": 1}


@pytest.mark.parametrize(("type_", "message", "expected"), [
    ("AssertionError", "content must be of type List[Dict[str, Any]], got None",
     DataError("null")),
    ("AssertionError", "content must be of type List[Dict[str, Any]], got 7",
     DataError("value", "7")),
    ("KeyError", "'output'", DataError("missing", column="output")),
    ("builtins.TypeError", "'NoneType' object is not iterable", DataError("null")),
    ("AssertionError", "something else", None),
    ("RuntimeError", "'output'", None),
])
def test_known_framework_errors(type_: str, message: str, expected: DataError | None) -> None:
    assert data_error(_exc(type_, message)) == expected


def _rows(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_scan_finds_every_bad_row(tmp_path: Path) -> None:
    good = {"instruction": "a", "input": "", "output": "b"}
    rows: list[Any] = [good] * 60 + [{**good, "output": None}, {"instruction": "a"},
                                     {**good, "instruction": ["x"]}, [1, 2]]
    path = _rows(tmp_path / "d.jsonl", rows)
    found = scan(path, Dataset(uri="file://d.jsonl", format="alpaca"))
    assert found.checked and found.rows == 64 and not found.unreadable
    assert [(p.row, p.line, p.column, p.field, p.problem) for p in found.problems] == [
        (61, 61, "output", ("format",), "is null"),
        (62, 62, "output", ("format",), "is missing"),
        (63, 63, "instruction", ("format",), "is a list, not text"),
        (64, 64, "", (), "is a list, not an object with one key per column"),
    ]
    # a blank line moves lines, not rows; column_map names its own field
    path.write_text('\n{"q": "a", "output": null}\n')
    found = scan(path, Dataset(uri="file://d.jsonl", format="alpaca",
                               column_map={"instruction": "q"}))
    assert [(p.row, p.line, p.column, p.field) for p in found.problems] == [
        (1, 2, "output", ("format",))]


def test_scan_of_csv_arrays_and_other_loaders(tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text('instruction,output\na,b\n"multi\nline",c\nshort\n')
    found = scan(csv, Dataset(uri="file://d.csv", format="alpaca"))
    assert [(p.row, p.line, p.column, p.problem) for p in found.problems] == [
        (3, 5, "output", "is missing")]
    array = tmp_path / "d.json"
    array.write_text(json.dumps([{"text": "a"}, {"text": 3}]))
    found = scan(array, Dataset(uri="file://d.json", format="text"))
    assert [(p.row, p.line, p.problem) for p in found.problems] == [
        (2, None, "is a number, not text")]
    chat = _rows(tmp_path / "c.jsonl", [{"conversations": [{"from": "human"}]},
                                        {"conversations": "hi"}])
    found = scan(chat, Dataset(uri="file://c.jsonl", format="sharegpt"))
    assert [(p.row, p.problem) for p in found.problems] == [
        (2, "is text, not a list of messages")]
    assert not scan(tmp_path / "d.parquet", Dataset(uri="file://d.parquet",
                                                    format="alpaca")).checked
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a"}\n{oops\n')
    assert scan(bad, Dataset(uri="file://bad.jsonl", format="text")).unreadable \
        .startswith("line 2 is not JSON")


def test_scan_keeps_ten_problems_and_counts_the_rest(tmp_path: Path) -> None:
    path = _rows(tmp_path / "d.jsonl", [{"text": None}] * 25)
    found = scan(path, Dataset(uri="file://d.jsonl", format="text"))
    assert len(found.problems) == 10 and found.more == 15


def test_a_failed_runs_data_error_is_located(tmp_path: Path) -> None:
    work = make_workdir(tmp_path / "work", tmp_path / "assets")
    good = {"instruction": "a", "input": "", "output": "b"}
    rows: list[Any] = [good] * 64
    rows[50] = {**good, "output": None}
    rows[55] = {**good, "output": None}
    _rows(work / "bad.jsonl", rows)
    job = tiny_job(work, ("data.train.uri=file://bad.jsonl",))
    exception = last_exception(TORCHTUNE_LOG.splitlines())
    assert exception is not None
    reason = {"validity": "failed", "exit_code": 1, "exception": exception}
    data = locate(reason, job, work)
    assert data == {"file": "bad.jsonl", "row": 51, "line": 51, "column": "output",
                    "field": "data.train.format", "problem": "is null", "more_rows": 1}
    assert describe({**reason, "data": data}).startswith(
        "data.train.format: row 51 of bad.jsonl: column 'output' is null (1 more like it); "
        "AssertionError: content must be of type")
    # mapped: the field that maps the column
    _rows(work / "bad.jsonl", [{"instruction": "a", "input": "", "answer": None}])
    job = tiny_job(work, ("data.train.uri=file://bad.jsonl",
                          "data.train.column_map.output=answer"))
    assert locate(reason, job, work)["field"] == "data.train.column_map.output"  # type: ignore[index]
    # an error that is not a data error, or no row that holds the value: nothing added
    assert locate({"exception": _exc("RuntimeError", "boom")}, job, work) is None
    assert locate({"exception": _exc("KeyError", "'nothere'")}, job, work) is None


def test_tokenizer_files_are_loaded(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models

    good = tmp_path / "tokenizer.json"
    Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]")).save(str(good))
    assert tokenizer_problem(good) is None
    bad = tmp_path / "bad" / "tokenizer.json"
    bad.parent.mkdir()
    bad.write_bytes(good.read_bytes()[:-20])
    assert (tokenizer_problem(bad) or "").startswith("the tokenizers library cannot load it")
    ranks = tmp_path / "tokenizer.model"  # tiktoken's rank file (Llama 3)
    ranks.write_text("IQ== 0\nIg== 1\n")
    assert tokenizer_problem(ranks) is None
    ranks.write_text("IQ== 0\nIg== 0\n")
    assert tokenizer_problem(ranks) == "line 2 repeats rank 0"
    ranks.write_text("IQ== 0\nnot a rank\n")
    assert tokenizer_problem(ranks) == "line 2 is not a tiktoken rank ('BASE64 RANK')"
    spm = tmp_path / "spm.model"
    spm.write_bytes(b"\x00\x01 not a model")
    assert (tokenizer_problem(spm) or "").startswith("it is not a sentencepiece model")


def test_scan_can_stop_at_the_first_problem(tmp_path: Path) -> None:
    path = _rows(tmp_path / "d.jsonl", [{"text": "a"}, {"text": None}, {"text": None}])
    found = scan(path, Dataset(uri="file://d.jsonl", format="text"), limit=1, stop=True)
    assert [p.row for p in found.problems] == [2] and found.more == 0 and found.rows == 2
