"""The quickstart's inputs laid out in a scratch project for the local preflight tests
(tests/cli): the example spec, a tiny valid safetensors file, a real sentencepiece model and
dataset rows."""

from __future__ import annotations

import functools
import json
import random
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest

from helpers.tinyspec import EXAMPLE


def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tmp_path`` as the working directory, with the quickstart spec in examples/."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "tiny-local.yaml").write_text(EXAMPLE.read_text())


def safetensors(path: Path, cut: int = 0) -> None:
    """A valid safetensors file with one 4x4 fp32 tensor (``cut`` bytes missing)."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}})
    raw = struct.pack("<Q", len(header)) + header.encode() + bytes(64)
    path.write_bytes(raw[:len(raw) - cut])


@functools.cache
def sentencepiece() -> bytes:
    """A real sentencepiece model, as ``ftspec quickstart`` trains it (a tenth of a second)."""
    from ftspec.reconciler.local.tiny import _tokenizer_corpus, _write_sentencepiece

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "tokenizer.model"
        _write_sentencepiece(_tokenizer_corpus(random.Random(0), []), path)
        return path.read_bytes()


def assets(root: Path, rows: list[dict[str, Any]] | None = None) -> None:
    model = root / ".ftspec/tiny/llama2/model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    safetensors(model / "model.safetensors")
    (model / "tokenizer.model").write_bytes(sentencepiece())
    rows = rows if rows is not None else [{"instruction": "a", "input": "", "output": "b"}]
    (root / ".ftspec/tiny/llama2/dataset.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows))
