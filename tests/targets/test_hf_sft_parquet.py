"""Parquet data files in the SFT entrypoint (``runtime/hf_sft/sources.py``): read by
``datasets``' parquet builder, with the images of a multimodal set stored as ``datasets.Image``
structs or as plain bytes, through to the training dataset whose images decode."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from ftspec.runtime import hf_sft
from ftspec.runtime.hf_sft.sources import Source, read_rows

datasets = pytest.importorskip("datasets")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

PNG = base64.b64decode(  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
CHATS = [[{"role": "user", "content": "what colour?"}, {"role": "assistant", "content": c}]
         for c in ("red", "blue")]


def image_struct_file(path: Path) -> Path:
    """As the Hub stores vision sets: an ``Image`` list column (``{bytes, path}`` structs)."""
    features = datasets.Features({
        "images": datasets.List(datasets.Image()),
        "messages": datasets.List({"role": datasets.Value("string"),
                                   "content": datasets.Value("string")})})
    ds = datasets.Dataset.from_dict({
        "images": [[{"bytes": PNG, "path": "a.png"}], [{"bytes": PNG, "path": "b.png"}]],
        "messages": CHATS}, features=features)
    ds.to_parquet(str(path))
    return path


def bytes_file(path: Path) -> Path:
    """Written by pyarrow alone: a binary column, no ``datasets`` metadata."""
    pq.write_table(pa.table({"picture": pa.array([PNG, PNG], pa.binary()),
                             "messages": CHATS}), str(path))
    return path


def test_image_struct_columns_stay_undecoded_and_rows_name_the_file(tmp_path: Path) -> None:
    path = image_struct_file(tmp_path / "vision.parquet")
    rows = read_rows(Source(str(path), format="multimodal"))
    assert [where for where, _ in rows] == [f"{path}#0", f"{path}#1"]
    assert rows[0][1]["images"] == [{"bytes": PNG, "path": "a.png"}]
    assert rows[1][1]["messages"] == CHATS[1]


@pytest.mark.parametrize("make,field", [(image_struct_file, "images"), (bytes_file, "picture")])
def test_multimodal_parquet_trains_on_decoded_images(tmp_path: Path, make: Any,
                                                     field: str) -> None:
    path = make(tmp_path / "vision.parquet")
    plan = hf_sft.Plan.from_json({"train": [
        {"source": str(path), "format": "multimodal", "image_field": field}]})
    data = hf_sft.build_data(plan, None, 0)
    assert len(data.train) == 2
    row = data.train[1]
    assert row["completion"][0]["content"] == [{"type": "text", "text": "blue"}]
    assert [b["type"] for b in row["prompt"][0]["content"]] == ["image", "text"]
    assert row["images"][0].size == (1, 1)  # decoded by datasets.Image from the stored bytes


def test_text_rows_from_parquet(tmp_path: Path) -> None:
    path = tmp_path / "text.parquet"
    pq.write_table(pa.table({"body": ["one", "two", "three"]}), str(path))
    plan = hf_sft.Plan.from_json({"train": [
        {"source": str(path), "format": "text", "text_field": "body"}]})
    assert [e for e in hf_sft.load_examples(plan)] == [("", "one"), ("", "two"), ("", "three")]


def test_a_broken_parquet_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(SystemExit, match=f"{path}: not a readable Parquet file"):
        read_rows(Source(str(path)))
