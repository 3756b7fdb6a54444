"""No code from run folders (issue 34): ``ftspec output`` counts a torchtune run's dataset
tokens from the config ftspec compiles from the spec, never from the launch file in
``.ftspec/runs/<id>/launch/``, which anyone who can write (or commit) that folder controls.
The attack: a launch file whose tokenizer is ``_component_: subprocess.check_call`` beside an
ended run. Before the fix it ran; now the run's file is only compared with the compiled one.
Run in a private PID namespace (a regression here runs a planted program)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from ftspec.reconciler.local.tokens import RefusedComponent, check_components
from helpers.pidns import private_pid_namespace

from security.localstate import RUN_DIR, SPEC, plant_record, project, record_for, run_cli

LOG = ("  0%|          | 0/2 [00:00<?, ?it/s]\r1|1|Loss: 5.7:  50%|#    | 1/2 [00:04<00:04]\n"
       "Step 1 | loss:5.7 lr:0.01 tokens_per_second_per_gpu:100.0\n")


def _ended_run(root: Path, launch_text: str) -> None:
    run = root / RUN_DIR
    (run / "launch").mkdir(parents=True)
    (run / "launch" / "config.yaml").write_text(launch_text)
    (run / "train.log").write_text(LOG)
    now = time.time()
    (run / "exit.json").write_text(json.dumps({"returncode": 0, "ended_at": now}))
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    plant_record(root, record_for(dead, now, state="started"))


def _planted(canary: Path) -> str:
    return ("tokenizer:\n  _component_: subprocess.check_call\n"
            f"  args: [touch, {canary}]\n"
            "dataset:\n  _component_: os.system\n"
            f"  command: touch {canary}\n")


@private_pid_namespace
def test_output_never_instantiates_a_component_planted_in_a_run_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path / "project")
    monkeypatch.chdir(root)
    canary = tmp_path / "canary"
    _ended_run(root, _planted(canary))
    code, out = run_cli(["output", SPEC, "--json"])
    assert code == 0, out
    measured = json.loads(out)["measured"]
    assert "dataset_tokens" not in measured
    assert "not the one the spec compiles to now" in measured["dataset_tokens_how"]
    assert not canary.exists()  # the planted component never ran


def test_only_torchtune_components_are_instantiated() -> None:
    good = {"tokenizer": {"_component_": "torchtune.models.llama2.llama2_tokenizer",
                          "path": "x"},
            "dataset": {"_component_": "torchtune.datasets.alpaca_dataset"}}
    check_components(good, resolve=False)
    for section, name in [("tokenizer", "subprocess.check_call"), ("dataset", "os.system"),
                          ("dataset", "torchtune.models.llama2.llama2_tokenizer"),
                          ("dataset", "torchtune.datasets._sft.os.system"),
                          ("tokenizer", "torchtune.models.llama2.__builtins__.eval")]:
        bad = {**good, section: {"_component_": name}}
        with pytest.raises(RefusedComponent, match="not one of torchtune's"):
            check_components(bad, resolve=False)
    nested = {**good, "dataset": {"_component_": "torchtune.datasets.alpaca_dataset",
                                  "transform": {"_component_": "builtins.exec"}}}
    with pytest.raises(RefusedComponent, match=r"dataset\.transform\._component_"):
        check_components(nested, resolve=False)


@pytest.mark.slow
def test_a_path_through_a_torchtune_module_is_refused_once_resolved() -> None:
    good = {"tokenizer": {"_component_": "torchtune.models.llama2.llama2_tokenizer"},
            "dataset": {"_component_": "torchtune.datasets.alpaca_cleaned_dataset"}}
    check_components(good)  # a partial of torchtune's own builder is torchtune's
    import torchtune.datasets

    module = next(n for n in dir(torchtune.datasets) if not n.startswith("_")
                  and hasattr(getattr(torchtune.datasets, n), "__path__"))
    bad = {**good, "dataset": {"_component_": f"torchtune.datasets.{module}.missing"}}
    with pytest.raises(RefusedComponent, match="not defined in torchtune"):
        check_components(bad)


def test_list_reads_no_fifo_planted_as_a_launch_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    from security.localstate import REPO

    (tmp_path / "examples").mkdir()
    (tmp_path / SPEC).write_text((REPO / SPEC).read_text())
    run = tmp_path / RUN_DIR
    (run / "launch").mkdir(parents=True)
    os.mkfifo(run / "launch" / "config.yaml")  # opening it to read blocks for a writer
    (run / "exit.json").write_text(json.dumps({"returncode": 0, "ended_at": time.time()}))
    plant_record(tmp_path, record_for(2**22 - 7, time.time()))
    done = subprocess.run([sys.executable, "-m", "ftspec.cli", "list", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert row["output"] == RUN_DIR  # the FIFO was passed over, not read
