"""Dataset loaders: detected from the file name, named by ``loader:`` where the name cannot
tell, hub datasets read by the hub's own loading. The torchtune arguments are checked by
loading real files with ``datasets.load_dataset`` exactly as torchtune calls it."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.dispatch import check_job
from ftspec.spec.catalog.loaders import detect
from ftspec.targets import get_target
from ftspec.targets import kubeflow_torchtune as kft
from helpers.jobs import make_job

ROWS = [{"instruction": "say hi", "output": "hi"}, {"instruction": "say bye", "output": "bye"}]


@pytest.mark.parametrize(("name", "loader"), [
    ("a.json", "json"), ("a.jsonl", "json"), ("a.jsonl.gz", "json"), ("a.csv", "csv"),
    ("a.csv.gz", "csv"), ("a.tsv", "tsv"), ("a.tsv.gz", "tsv"), ("a.parquet", "parquet"),
    ("a.txt", "text"), ("a.arrow", "arrow"), ("folder", None), ("a.dat", None),
])
def test_detect(name: str, loader: str | None) -> None:
    assert detect(f"/data/{name}") == loader


def _write(path: Path) -> None:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    stem = path.name.removesuffix(".gz")
    with opener(path, "wt", encoding="utf-8", newline="") as out:
        if stem.endswith((".csv", ".tsv", ".dat")):
            writer = csv.DictWriter(out, fieldnames=list(ROWS[0]),
                                    delimiter="\t" if ".tsv" in stem or ".dat" in stem else ",")
            writer.writeheader()
            writer.writerows(ROWS)
        else:
            out.write("".join(json.dumps(r) + "\n" for r in ROWS))


def _torchtune_dataset(uri: str, loader: str | None = None) -> dict[str, Any]:
    train: dict[str, Any] = {"uri": uri, "column_map": {"input": "instruction"}}
    if loader:
        train["loader"] = loader
    job = make_job(deploy={"target": "local"}, data={"train": train})
    assert not [d.format() for d in check_job(job, "torchtune") if d.is_error]
    (config,) = [a for a in get_target("torchtune").compile(job) if a.kind == "config"]
    assert config.obj is not None
    return dict(config.obj["dataset"])


@pytest.mark.parametrize(("name", "loader"), [
    ("train.jsonl", None), ("train.csv.gz", None), ("train.tsv", None), ("train.dat", "tsv"),
    ("folder", None),
])
def test_local_files_load_as_torchtune_calls_load_dataset(tmp_path: Path, name: str,
                                                          loader: str | None) -> None:
    from datasets import load_dataset

    target = tmp_path / name
    if name == "folder":
        target.mkdir()
        _write(target / "part.jsonl")
    else:
        _write(target)
    ds = _torchtune_dataset(f"file://{target}", loader)
    # torchtune's builders: load_dataset(source, data_files=…, split=…, **load_dataset_kwargs)
    kwargs = {k: v for k, v in ds.items() if k in ("data_files", "data_dir", "delimiter", "name")}
    rows = load_dataset(ds["source"], split=ds["split"], **kwargs)
    assert [dict(r) for r in rows] == ROWS


def test_unknown_suffix_needs_a_loader() -> None:
    with pytest.raises(AssertionError,
                       match=r"7:10: error: data.train.uri: cannot tell the format of a \.dat"):
        make_job(deploy={"target": "local"}, data={"train": {"uri": "file:///data/train.dat"}})


@pytest.mark.parametrize(("uri", "loader", "expected"), [
    ("hf://tatsu-lab/alpaca", None, ["dataset.source=/workspace/dataset"]),
    ("hf://org/repo/data/train.csv.gz", None,
     ["dataset.data_files=/workspace/dataset/data/train.csv.gz", "dataset.source=csv"]),
    ("hf://org/repo/data/x.tsv", None, ["dataset.data_files=/workspace/dataset/data/x.tsv",
                                        "dataset.source=csv", 'dataset.delimiter="\\t"']),
    ("hf://org/repo/data", "json", ["dataset.data_dir=/workspace/dataset/data",
                                    "dataset.source=json"]),
    ("s3://bucket/prefix", None, ["dataset.source=/workspace/dataset"]),
])
def test_kubeflow_dataset_location(uri: str, loader: str | None, expected: list[str]) -> None:
    train: dict[str, Any] = {"uri": uri}
    if loader:
        train["loader"] = loader
    job = make_job(data={"train": train})
    args = [a for a in kft.trainer_args(job)
            if a.startswith(("dataset.source", "dataset.data_", "dataset.delimiter"))]
    assert args == expected


def test_hub_dataset_goes_through_the_hub() -> None:
    assert _torchtune_dataset("hf://tatsu-lab/alpaca")["source"] == "tatsu-lab/alpaca"
    ds = _torchtune_dataset("hf://org/repo/data/train.jsonl")
    assert (ds["source"], ds["data_files"]) == ("org/repo", "data/train.jsonl")


def test_accelerate_refuses_loaders_its_entrypoint_cannot_read() -> None:
    job = make_job(launcher="accelerate", deploy={"target": "local"},
                   data={"train": {"uri": "file:///data/train.csv"}})
    errors = [d for d in check_job(job, "accelerate") if d.is_error]
    assert [(d.code, d.path) for d in errors] == [
        ("target.accelerate.loader", ("data", "train", "uri"))]


def test_accelerate_reads_parquet_files_by_their_name() -> None:
    from ftspec.targets.accelerate_sft import sft_config
    from ftspec.targets.paths import default_paths

    job = make_job(launcher="accelerate", deploy={"target": "local"},
                   data={"train": {"uri": "file:///data/train.parquet", "format": "text",
                                   "column_map": None}})
    assert not [d for d in check_job(job, "accelerate") if d.is_error]
    assert sft_config(job, default_paths(job))["datasets"] == [
        {"path": "parquet", "data_files": "/data/train.parquet", "split": "train"}]
    named = make_job(launcher="accelerate", deploy={"target": "local"},
                     data={"train": {"uri": "file:///data/train.bin", "loader": "parquet"}})
    errors = [d for d in check_job(named, "accelerate") if d.is_error]
    assert [(d.code, d.path) for d in errors] == [
        ("target.accelerate.loader", ("data", "train", "uri"))]
    assert "by its .parquet name" in errors[0].format()
