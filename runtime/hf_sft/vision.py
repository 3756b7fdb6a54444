"""Multimodal rows for TRL's vision path (see ``targets/accelerate_vision.py``).

A row's conversation becomes TRL's conversational prompt / completion (every turn before the
last / the final assistant turn) with structured content: ``{"type": "text", "text": ...}``
blocks and ``{"type": "image"}`` placeholders, where ``image_tag`` stands in user text or
before the first user message's text; rows already in TRL's layout (content as a list of typed
blocks, as hub vision datasets have) keep their own placeholders. Its images are files
(relative to ``image_dir``, else the data file's folder), base64 ``data:`` URIs, encoded
image bytes or ``datasets.Image`` structs (``{bytes, path}``) of a Parquet file, or images
of a hub dataset; the dataset's ``images`` column is cast to ``datasets.Image`` so they are
decoded when a batch is built.
``check_lengths`` runs TRL's own collator over every row, untruncated, and stops before
training where ``max_length`` would cut a row's image tokens.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from ftspec.runtime.hf_sft.render import messages_of
from ftspec.runtime.hf_sft.sources import Source

Block = dict[str, str | None]


def vision_row(row: dict[str, Any], src: Source, where: str) -> dict[str, Any]:
    messages = messages_of(row, src, where)
    images = [_image(v, src, where) for v in _listed(row, src, where)]
    structured = _place_images(messages, len(images), src.image_tag, where)
    return {"prompt": structured[:-1], "completion": structured[-1:], "images": images}


def _listed(row: dict[str, Any], src: Source, where: str) -> list[Any]:
    if src.image_field not in row:
        raise SystemExit(f"{where}: no image column {src.image_field!r} "
                         f"(columns: {sorted(row)}; set image_field)")
    value = row[src.image_field]
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _image(value: Any, src: Source, where: str) -> dict[str, Any]:
    """A ``datasets.Image`` storage value: ``{"bytes": ..., "path": ...}``."""
    if isinstance(value, str) and value.startswith("data:"):
        head, _, body = value.partition(",")
        if not head.endswith(";base64"):
            raise SystemExit(f"{where}: an image data: URI must be base64")
        try:
            return {"bytes": base64.b64decode(body, validate=True), "path": None}
        except ValueError as err:
            raise SystemExit(f"{where}: bad base64 image: {err}") from None
    if isinstance(value, str):
        base = Path(src.image_dir) if src.image_dir is not None else (
            Path(src.source).parent if src.hub_name is None else Path("."))
        path = base / value
        if not path.is_file():
            raise SystemExit(f"{where}: no image file {path}")
        return {"bytes": None, "path": str(path)}
    if isinstance(value, bytes):  # a Parquet column of encoded image files
        return {"bytes": value, "path": None}
    if isinstance(value, dict) and ("bytes" in value or "path" in value):
        return {"bytes": value.get("bytes"), "path": value.get("path")}
    if hasattr(value, "save"):  # a decoded image of a hub dataset
        out = io.BytesIO()
        value.save(out, format="PNG")
        return {"bytes": out.getvalue(), "path": None}
    raise SystemExit(f"{where}: an image must be a path, a data: URI, bytes or an image, "
                     f"not {type(value).__name__}")


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


_IMAGE: Block = {"type": "image", "text": None}


def _typed(content: list[Any], where: str) -> tuple[list[Block], int]:
    """A row's own typed blocks (TRL's layout: ``{"type": "text" | "image", ...}``)."""
    blocks: list[Block] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "image":
            blocks.append(dict(_IMAGE))
        elif kind == "text":
            blocks.append(_text(str(block.get("text") or "")))
        else:
            raise SystemExit(f"{where}: a content block must be {{type: text|image}}: {block}")
    return blocks, sum(1 for b in blocks if b["type"] == "image")


def _place_images(messages: list[dict[str, Any]], count: int, tag: str | None,
                  where: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    placed = 0
    first_user = True
    for m in messages:
        content = m["content"]
        blocks: list[Block] = []
        if isinstance(content, list):
            blocks, images = _typed(content, where)
            placed += images
        elif m["role"] == "user" and tag is not None and tag in content:
            parts = content.split(tag)
            for i, part in enumerate(parts):
                if i:
                    blocks.append(dict(_IMAGE))
                    placed += 1
                if part:
                    blocks.append(_text(part))
        elif m["role"] == "user" and tag is None and first_user and not _typed_rows(messages):
            blocks = [dict(_IMAGE) for _ in range(count)] + [_text(content)]
            placed += count
        else:
            blocks = [_text(content)]
        first_user = first_user and m["role"] != "user"
        out.append({"role": m["role"], "content": blocks})
    if placed != count:
        raise SystemExit(f"{where}: {count} images but {placed} image placeholders "
                         f"({tag!r} in the user turns)" if tag is not None else
                         f"{where}: {count} images and no user turn to put them in")
    return out


def _typed_rows(messages: list[dict[str, Any]]) -> bool:
    """The row places its images itself (typed blocks)."""
    return any(isinstance(m["content"], list) for m in messages)


def with_images(dataset: Any) -> Any:
    """The dataset with its ``images`` column decoded lazily by ``datasets``."""
    import datasets

    if "images" not in dataset.column_names:
        return dataset
    return dataset.cast_column("images", datasets.List(datasets.Image()))


def check_lengths(trainer: Any, max_length: int | None) -> None:
    """Stop where ``max_length`` would cut a training row's image tokens."""
    import dataclasses

    processor = trainer.processing_class
    image_id = getattr(processor, "image_token_id", None)
    if max_length is None or image_id is None:
        return
    collate = dataclasses.replace(trainer.data_collator, max_length=None)
    for i, row in enumerate(trainer.train_dataset):
        ids = collate([dict(row)])["input_ids"][0]
        at = (ids == image_id).nonzero()
        if len(at) and int(at[-1]) >= max_length:
            raise SystemExit(
                f"training row {i + 1}: its {len(at)} image tokens end at position "
                f"{int(at[-1]) + 1} of {len(ids)}, past max_length {max_length} "
                "(data.max_seq_len): truncation would cut them and fail the step; raise "
                f"data.max_seq_len to at least {int(at[-1]) + 1}")
