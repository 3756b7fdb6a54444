"""Kept runs (``reconciler.local.generations``): a replace or destroy moves the ended run's
folder to ``.ftspec/history/<id>/<n>``; what ``history`` reads back is data, checked."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ftspec.reconciler.local.generations import history, inside, keep, plan_note
from ftspec.reconciler.local.observe import RunView
from ftspec.reconciler.local.record import STARTED, parse_record
from ftspec.reconciler.local.state import StateStore
from ftspec.reconciler.model import Phase
from ftspec.reconciler.progress import Tracker


def _view(root: Path, run_dir: str = ".ftspec/runs/a") -> RunView:
    record = parse_record({
        "spec_id": "a", "spec_hash": "", "spec_file": "a.yaml", "launcher": "torchtune",
        "argv": ["true"], "env": {}, "cwd": str(root), "run_dir": run_dir,
        "log": f"{run_dir}/train.log", "started_at": time.time() - 5, "supervisor_pid": 4242,
        "supervisor_create_time": 1.0, "pgid": 4242, "state": STARTED}, "a")
    return RunView(record, Phase.SUCCEEDED, "succeeded", False, 0, None, False, Tracker(),
                   time.time())


def test_a_kept_run_moves_whole_and_is_listed(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    out = tmp_path / ".ftspec/runs/a/output"
    out.mkdir(parents=True)
    (out / "adapter.safetensors").write_bytes(b"w")
    assert keep(store, _view(tmp_path)) == ".ftspec/history/a/1"
    assert not (tmp_path / ".ftspec/runs/a").exists()
    assert (tmp_path / ".ftspec/history/a/1/output/adapter.safetensors").read_bytes() == b"w"
    (tmp_path / ".ftspec/runs/a").mkdir()
    assert keep(store, _view(tmp_path)) == ".ftspec/history/a/2"
    assert [g["generation"] for g in history(store, "a")] == [1, 2]
    assert history(store, "a")[0]["phase"] == "Succeeded"


def test_nothing_to_keep_and_a_link_is_not_followed(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    assert keep(store, _view(tmp_path)) is None  # no run folder
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".ftspec/runs").mkdir(parents=True)
    (tmp_path / ".ftspec/runs/a").symlink_to(elsewhere)
    assert keep(store, _view(tmp_path)) is None
    assert elsewhere.is_dir() and (tmp_path / ".ftspec/runs/a").is_symlink()


def test_history_reads_only_entries_of_the_right_shape(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    base = tmp_path / ".ftspec/history/a"
    for name, info in (("1", {"generation": 1, "phase": "Failed", "steps": 3}),
                       ("2", {"generation": 7}), ("3", ["not", "a", "dict"]),
                       ("x", {"generation": 1})):
        (base / name).mkdir(parents=True)
        (base / name / "generation.json").write_text(json.dumps(info))
    (base / "4").mkdir()
    (base / "4" / "generation.json").write_text("{not json")
    (rows,) = history(store, "a"),
    assert [(g["generation"], g["phase"], g["steps"]) for g in rows] == [(1, "Failed", 3)]


def test_the_plan_says_what_a_replace_keeps_and_what_it_writes_over(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    note = plan_note(store, ".ftspec/runs/a", "a", ".ftspec/runs/a/output")
    assert note == ("its run folder .ftspec/runs/a is kept as generation 1 "
                    "(.ftspec/history/a/1)")
    assert "lie outside it and are written over" in plan_note(store, ".ftspec/runs/a", "a",
                                                              "out/a")
    assert inside(".ftspec/runs/a", ".ftspec/runs/a/./output")
    assert not inside(".ftspec/runs/a", ".ftspec/runs/ab/output")
    assert not inside(".ftspec/runs/a", "/abs/output")
