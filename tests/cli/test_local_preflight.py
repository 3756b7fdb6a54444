"""Plan-time preflight of the local backend, through the real CLI: each input that would make
the run fail before its first step is an error at its spec field, and nothing starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_run import run
from helpers.preflight_assets import assets, in_tmp, safetensors, sentencepiece

pytestmark = pytest.mark.usefixtures("_in_tmp")


@pytest.fixture
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    in_tmp(tmp_path, monkeypatch)


def _plan(capsys: pytest.CaptureFixture[str], *sets: str) -> tuple[int, str, str]:
    args = [a for s in sets for a in ("--set", s)]
    return run(capsys, "plan", "examples/tiny-local.yaml", *args)


def test_ready_inputs_plan_a_create(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assets(tmp_path)
    code, out, err = _plan(capsys)
    assert code == 0, err
    assert "local.run.tiny-local will be created" in out


def test_missing_inputs_are_errors_at_their_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _plan(capsys)
    assert code == 1
    assert out == ""
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert [line.split(": the ")[0] for line in lines] == [
        "examples/tiny-local.yaml:23:8: error: model.uri",
        "examples/tiny-local.yaml:34:10: error: model.tokenizer.uri",
        "examples/tiny-local.yaml:39:10: error: data.train.uri",
    ]
    assert "hint: run `ftspec quickstart` first" in err
    assert not Path(".ftspec/local").exists()  # nothing started


def test_corrupt_weights_and_missing_column(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    assets(tmp_path, rows=[{"question": "a", "output": "b"}])
    safetensors(tmp_path / ".ftspec/tiny/llama2/model/model.safetensors", cut=10)
    code, _, err = _plan(capsys)
    assert code == 1
    assert ("examples/tiny-local.yaml:23:8: error: model.uri: the weights "
            f"{tmp_path}/.ftspec/tiny/llama2/model/model.safetensors are unreadable: the "
            "header describes 137 bytes, the file has 127") in err
    assert ("examples/tiny-local.yaml:40:13: error: data.train.format: row 1 of "
            f"{tmp_path}/.ftspec/tiny/llama2/dataset.jsonl has no column 'instruction' "
            "(format alpaca; its columns: output, question)") in err
    assert "column_map: {instruction: <column>}" in err


def test_column_map_names_the_missing_column(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    assets(tmp_path, rows=[{"question": "a", "output": "b"}])
    code, _, err = _plan(capsys, "data.train.column_map.instruction=prompt")
    assert code == 1
    assert "error: data.train.column_map.instruction: row 1 of" in err
    assert "has no column 'prompt'" in err
    assert err.startswith("--set[0]:1:")


def test_rows_that_do_not_parse(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assets(tmp_path)
    Path(".ftspec/tiny/llama2/dataset.jsonl").write_text('{"instruction": "a"}\n[1, 2]\n')
    code, _, err = _plan(capsys)
    assert code == 1
    assert ("examples/tiny-local.yaml:39:10: error: data.train.uri: the dataset "
            f"{tmp_path}/.ftspec/tiny/llama2/dataset.jsonl does not parse: line 2 is a JSON "
            "list, not an object with one key per column") in err


def test_no_room_for_the_checkpoints(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assets(tmp_path)
    code, _, err = _plan(capsys, "output.uri=file:///proc/ftspec-out")
    assert code == 1
    assert "error: output.uri: the run will save about" in err
    assert "of checkpoints; the file system of /proc/ftspec-out has" in err


def test_launcher_packages_missing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    assets(tmp_path)
    real = importlib.util.find_spec

    def hide(name: str, *args: object) -> object:
        return None if name == "torchao" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", hide)
    code, _, err = _plan(capsys)
    assert code == 1
    assert "examples/tiny-local.yaml:70:11: error: launcher: the torchtune launcher needs " \
           "torchao, not installed" in err
    assert "pip install 'ftspec[torchtune]'" in err


def test_counted_rows_that_fill_no_global_batch(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    """Without num_examples the plan counts the JSON Lines rows: 3 rows cannot fill the
    global batch of 4, and torchtune drops the partial batch (the rule of a declared size)."""
    row = {"instruction": "a", "input": "", "output": "b"}
    assets(tmp_path, [row] * 3)
    code, out, err = _plan(capsys, "data.train.num_examples=null")
    assert code == 1 and out == ""
    dataset = tmp_path / ".ftspec/tiny/llama2/dataset.jsonl"
    assert ("examples/tiny-local.yaml:56:22: error: training.global_batch_size: 3 rows / "
            "global batch 4 = 0 full batches: torchtune drops the partial batch, so the run "
            "would train 0 steps\n  hint: use a global batch of at most 3 (= micro batch x "
            "gradient accumulation x 1 process), or train on more rows (the rows of "
            f"{dataset}, counted at plan)") in err, err
    _assets_rows(tmp_path, [row] * 4)
    code, out, err = _plan(capsys, "data.train.num_examples=null")
    assert code == 0 and "will be created" in out, err


def _assets_rows(root: Path, rows: list[dict[str, str]]) -> None:
    (root / ".ftspec/tiny/llama2/dataset.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))


def test_a_corrupt_tokenizer_is_a_plan_error(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    assets(tmp_path)
    tokenizer = tmp_path / ".ftspec/tiny/llama2/model/tokenizer.model"
    tokenizer.write_bytes(sentencepiece()[:200])  # truncated
    code, out, err = _plan(capsys)
    assert code == 1 and out == ""
    assert (f"examples/tiny-local.yaml:34:10: error: model.tokenizer.uri: the tokenizer "
            f"{tokenizer} cannot be loaded: it is not a sentencepiece model") in err, err
    # a tokenizer.json in the model folder (no tokenizer.uri): at model.uri
    (tmp_path / ".ftspec/tiny/llama2/model/tokenizer.json").write_text('{"model": ')
    code, _, err = _plan(capsys, "model.tokenizer.uri=null", "launcher=accelerate",
                         "method.lora.output=false")
    assert code == 1
    assert ("examples/tiny-local.yaml:23:8: error: model.uri: the tokenizer "
            f"{tmp_path}/.ftspec/tiny/llama2/model/tokenizer.json cannot be loaded: the "
            "tokenizers library cannot load it: ") in err, err


ROW = {"instruction": "a", "input": "", "output": "b"}


def test_first_rows_null_is_a_plan_error(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    assets(tmp_path, [ROW, {**ROW, "output": None}, *[ROW] * 6])
    code, _, err = _plan(capsys)
    assert code == 1
    assert ("examples/tiny-local.yaml:40:13: error: data.train.format: row 2 of "
            f"{tmp_path}/.ftspec/tiny/llama2/dataset.jsonl: column 'output' is null "
            "(format alpaca)") in err, err


@pytest.mark.slow
def test_check_data_reads_every_row(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Row 51's null is past the rows a default plan reads; --check-data finds it, with
    the other bad rows, each at the spec field that asks for its column."""
    rows: list[dict[str, Any]] = [dict(ROW) for _ in range(64)]
    rows[50]["output"] = None
    rows[59]["instruction"] = 7
    del rows[62]["output"]
    assets(tmp_path, rows)
    code, out, err = _plan(capsys)
    assert code == 0 and "will be created" in out, err  # the cheap default: first rows
    code, out, err = run(capsys, "plan", "examples/tiny-local.yaml", "--check-data")
    assert code == 1 and out == ""
    dataset = tmp_path / ".ftspec/tiny/llama2/dataset.jsonl"
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert lines == [
        (f"examples/tiny-local.yaml:40:13: error: data.train.format: row 51 of {dataset}: "
        "column 'output' is null (format alpaca)"),
        (f"examples/tiny-local.yaml:40:13: error: data.train.format: row 60 of {dataset}: "
        "column 'instruction' is a number, not text (format alpaca)"),
        (f"examples/tiny-local.yaml:40:13: error: data.train.format: row 63 of {dataset}: "
        "column 'output' is missing (format alpaca)"),
    ], err
    # a column_map: the problem is at the field that maps the column
    for row in rows:
        row["answer"] = row.pop("output", None) if row is not rows[62] else None
    rows[62].pop("answer")
    _assets_rows(tmp_path, rows)
    code, _, err = run(capsys, "plan", "examples/tiny-local.yaml", "--check-data",
                       "--set", "data.train.column_map.output=answer")
    assert code == 1
    assert ("--set[0]:1:30: error: data.train.column_map.output: row 51 of "
            f"{dataset}: column 'answer' is null (format alpaca)") in err, err
