"""Multimodal rows in the SFT entrypoint (``runtime/hf_sft/vision.py``): where images go
in the conversation, where they are read from, and the row-located errors."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from ftspec.runtime.hf_sft.sources import Source
from ftspec.runtime.hf_sft.vision import vision_row

PNG = base64.b64decode(  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def chat(user: Any, answer: str = "red") -> list[dict[str, Any]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "a.png").write_bytes(PNG)
    return tmp_path / "rows.jsonl"


def test_images_precede_the_first_user_message_and_paths_are_the_data_files(
        data: Path) -> None:
    src = Source(str(data), format="multimodal")
    row = vision_row({"images": "pics/a.png", "messages": chat("what colour?")}, src, "r:1")
    assert row["prompt"] == [{"role": "user", "content": [
        {"type": "image", "text": None}, {"type": "text", "text": "what colour?"}]}]
    assert row["completion"] == [{"role": "assistant",
                                  "content": [{"type": "text", "text": "red"}]}]
    assert row["images"] == [{"bytes": None, "path": str(data.parent / "pics" / "a.png")}]


def test_image_tag_places_each_image_and_data_uris_are_bytes(data: Path) -> None:
    src = Source(str(data), format="multimodal", image_field="pics", image_tag="<img>")
    uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    row = vision_row({"pics": [uri, uri], "messages": chat("left <img> right <img>")},
                     src, "r:1")
    assert [b["type"] for b in row["prompt"][0]["content"]] == [
        "text", "image", "text", "image"]
    assert row["images"] == [{"bytes": PNG, "path": None}] * 2


def test_typed_rows_keep_their_own_placeholders(data: Path) -> None:
    src = Source(str(data), format="multimodal", image_dir=str(data.parent / "pics"))
    user = [{"type": "text", "text": "see"}, {"type": "image"}]
    row = vision_row({"images": ["a.png"], "messages": chat(user)}, src, "r:1")
    assert row["prompt"][0]["content"] == [{"type": "text", "text": "see"},
                                           {"type": "image", "text": None}]


@pytest.mark.parametrize("row,message", [
    ({"images": ["missing.png"], "messages": chat("x")}, "r:3: no image file"),
    ({"messages": chat("x")}, "r:3: no image column 'images'"),
    ({"images": ["pics/a.png"], "messages": chat("no tag here")},
     "r:3: 1 images but 0 image placeholders ('<img>' in the user turns)"),
    ({"images": ["data:image/png,abc"], "messages": chat("<img>")}, "must be base64"),
])
def test_bad_rows_name_the_row(data: Path, row: dict[str, Any], message: str) -> None:
    src = Source(str(data), format="multimodal", image_tag="<img>")
    with pytest.raises(SystemExit, match=message.replace("(", r"\(").replace(")", r"\)")):
        vision_row(row, src, "r:3")
