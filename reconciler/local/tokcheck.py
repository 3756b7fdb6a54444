"""Plan-time load of a local tokenizer file: a corrupt one is an error at the spec field,
not a launcher's traceback after the model has loaded.

Three kinds, told apart by name and content as the launchers read them:

- ``tokenizer.json`` (Hugging Face fast tokenizers): loaded with ``tokenizers`` (its Rust
  parser checks the whole model; about 20 ms to import), else parsed as JSON;
- tiktoken rank files (Llama 3's ``tokenizer.model``: one ``BASE64 RANK`` a line): every
  line parsed here (no tiktoken import: a few ms for 128k lines);
- anything else (``tokenizer.model``): a sentencepiece model, loaded with ``sentencepiece``
  when it is installed (the launchers that read one need it).

A missing package means the check is skipped (the launcher check reports the package).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

_TIKTOKEN_LINE = re.compile(rb"^[A-Za-z0-9+/]+=*\s+\d+\s*$")
_MAX_MESSAGE = 200


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:_MAX_MESSAGE]


def tokenizer_problem(path: Path) -> str | None:
    """Why the tokenizer file ``path`` cannot be loaded, or None. Raises OSError."""
    if path.name.endswith(".json"):
        return _json_problem(path)
    with path.open("rb") as fh:
        head = fh.readline(4096)
    if _TIKTOKEN_LINE.match(head):
        return _tiktoken_problem(path)
    return _sentencepiece_problem(path)


def _json_problem(path: Path) -> str | None:
    if importlib.util.find_spec("tokenizers") is not None:
        from tokenizers import Tokenizer

        try:
            Tokenizer.from_file(str(path))
        except Exception as exc:  # noqa: BLE001 - the Rust parser raises plain Exception
            return f"the tokenizers library cannot load it: {_short(exc)}"
        return None
    try:
        data = json.loads(path.read_bytes())
    except ValueError as exc:
        return f"it is not JSON: {_short(exc)}"
    return None if isinstance(data, dict) and "model" in data else \
        "it holds no tokenizer model (no \"model\" key)"


def _tiktoken_problem(path: Path) -> str | None:
    ranks: set[bytes] = set()
    with path.open("rb") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if not _TIKTOKEN_LINE.match(line):
                return f"line {number} is not a tiktoken rank ('BASE64 RANK')"
            rank = line.split()[1].lstrip(b"0") or b"0"
            if rank in ranks:
                return f"line {number} repeats rank {int(rank)}"
            ranks.add(rank)
    return None if ranks else "it holds no ranks"


def _sentencepiece_problem(path: Path) -> str | None:
    if importlib.util.find_spec("sentencepiece") is None:
        return None
    import sentencepiece

    try:
        processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError, TypeError) as exc:
        return f"it is not a sentencepiece model: {_short(exc)}"
    return None if processor.vocab_size() > 0 else "its vocabulary is empty"
