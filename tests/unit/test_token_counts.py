"""The local backend's dataset token count (``reconciler/local/measure_run.py``): said to the
reporter as it starts and ends, made once per process for the runs that read the same
tokenizer and data (a sweep's points), made again when a file they name changes, and never
made for a run whose own launch file is not the config the spec compiles to now."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ftspec.reconciler.local import measure_run

CONFIG = """\
dataset:
  _component_: torchtune.datasets.alpaca_dataset
  data_files: data/train.jsonl
  source: json
tokenizer:
  _component_: torchtune.models.llama2.llama2_tokenizer
  max_seq_len: 256
  path: model/tokenizer.model
optimizer:
  lr: {lr}
"""


class Events:
    def __init__(self) -> None:
        self.said: list[str] = []

    def event(self, message: str, **data: Any) -> None:
        assert data.get("measuring")
        self.said.append(message)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """A project with three runs' launch files (learning rates 1, 2, 3) and the files
    their config names; ``_count`` replaced by a recorder of the configs it was given."""
    for rel in ("data/train.jsonl", "model/tokenizer.model"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n", encoding="utf-8")
    for lr in (1, 2, 3):
        launch = tmp_path / f".ftspec/runs/p{lr}/launch"
        launch.mkdir(parents=True)
        (launch / "config.yaml").write_text(CONFIG.format(lr=lr), encoding="utf-8")
    counted: list[str] = []

    def count(root: Path, compiled: str) -> tuple[dict[str, int], None]:
        counted.append(compiled)
        return {"rows": 64, "tokens": 1000 + len(counted)}, None

    monkeypatch.setattr(measure_run, "_count", count)
    monkeypatch.setattr(measure_run, "_COUNTS", {})
    return tmp_path, counted


def _tokens(root: Path, lr: int, events: Events, compiled_lr: int | None = None
            ) -> tuple[dict[str, int] | None, str | None]:
    text = CONFIG.format(lr=lr if compiled_lr is None else compiled_lr)
    job: Any = SimpleNamespace(name=f"p{lr}")
    return measure_run._counted(job, root, f".ftspec/runs/p{lr}", lambda: {"config.yaml": text},
                                events)


def test_a_sweeps_points_are_counted_once_and_each_count_is_said(
        project: tuple[Path, list[str]]) -> None:
    root, counted = project
    events = Events()
    first = _tokens(root, 1, events)
    assert first == ({"rows": 64, "tokens": 1001}, None)
    assert events.said[0] == ("p1: counting the dataset's tokens with the run's tokenizer "
                              "(once per run, kept beside it)")
    assert events.said[1].startswith("p1: 1001 tokens in 64 rows, counted in ")
    # another point: only the learning rate differs, so the count is the first one's
    assert _tokens(root, 2, events) == first
    assert events.said[2] == ("p2: 1001 tokens in 64 rows, as counted for a run with the "
                              "same tokenizer and data")
    assert len(counted) == 1


def test_a_changed_data_file_is_counted_again(project: tuple[Path, list[str]]) -> None:
    root, counted = project
    _tokens(root, 1, Events())
    data = root / "data/train.jsonl"
    data.write_text("x\ny\n", encoding="utf-8")
    os.utime(data, ns=(1, 1))
    assert _tokens(root, 2, Events()) == ({"rows": 64, "tokens": 1002}, None)
    assert len(counted) == 2


def test_a_run_whose_launch_file_is_not_the_compiled_config_is_not_counted(
        project: tuple[Path, list[str]]) -> None:
    root, counted = project
    events = Events()
    dataset, note = _tokens(root, 3, events, compiled_lr=9)
    assert dataset is None and note is not None
    assert note.startswith("the run's config is not the one the spec compiles to now")
    # a count kept for the same data does not stand in for the check either
    _tokens(root, 1, events)
    assert _tokens(root, 3, events, compiled_lr=9)[0] is None
    assert len(counted) == 1 and not any(s.startswith("p3") for s in events.said)
