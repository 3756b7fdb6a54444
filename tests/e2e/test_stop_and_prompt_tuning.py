"""Real runs through the CLI (apply --wait, output --json) of the quickstart's tiny model on
CPU with the accelerate launcher: ``training.stop`` ends a run early and its measured
properties say so (after_seconds; a scaled-down auto-stop rule whose stable throughput
excludes the warm-up), and prompt tuning (PEFT's PromptTuningConfig) trains."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.tinyspec import EXAMPLE

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
MAX_STEPS = 2000
"""Far more steps than any of these runs takes: only the stop rule ends them."""


def _spec(workdir: Path, name: str, **training: Any) -> Path:
    d = yaml.safe_load(EXAMPLE.read_text())
    d["metadata"]["name"] = name
    d["launcher"] = "accelerate"
    d["method"]["lora"]["output"] = False  # TRL refuses an adapter on lm_head
    d["training"].update({"epochs": None, "max_steps": MAX_STEPS, **training})
    d["output"]["uri"] = f"file://.ftspec/runs/{name}/output"
    path = workdir / "examples" / f"{name}.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path.relative_to(workdir)


def _ftspec(workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FTSPEC, *args], cwd=workdir, env=env, capture_output=True,
                          check=False, text=True, timeout=900)


def _apply_and_measure(workdir: Path, env: dict[str, str], spec: Path) -> dict[str, Any]:
    applied = _ftspec(workdir, env, "apply", str(spec), "--auto-approve", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    out = _ftspec(workdir, env, "output", str(spec), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    got: dict[str, Any] = json.loads(out.stdout)
    return got


def test_after_seconds_stops_the_run_and_is_recorded(workdir: Path,
                                                     e2e_env: dict[str, str]) -> None:
    spec = _spec(workdir, "stop-after", stop={"after_seconds": 4})
    m = _apply_and_measure(workdir, e2e_env, spec)["measured"]
    assert m["validity"] == "ok" and m["stopped_by"] == "after_seconds"
    assert 1 <= m["stopped_at_step"] < MAX_STEPS
    # the trainer's own runtime covers the 4 s (the check runs after each step)
    assert m["train_runtime_s"] >= 4
    assert "stable_window" not in m  # no warm-up asked for: nothing to exclude
    log = (workdir / ".ftspec/runs/stop-after/train.log").read_text()
    steps = len(re.findall(r"\{'loss': ", log))
    assert steps == m["stopped_at_step"]  # logging every step: one record per step trained


def test_auto_stop_measures_the_throughput_without_the_warmup(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    rule = {"warmup_seconds": 2, "stable_seconds": 2, "stable_steps": 3}
    spec = _spec(workdir, "stop-auto", stop=rule)
    m = _apply_and_measure(workdir, e2e_env, spec)["measured"]
    assert m["validity"] == "ok" and m["stopped_by"] == "auto"
    w = m["stable_window"]
    assert w["complete"] is True
    assert w["from_step"] >= 1  # the warm-up took whole steps (at least the first)
    assert w["to_step"] == m["stopped_at_step"] < MAX_STEPS
    assert w["to_step"] - w["from_step"] >= 3 and w["seconds"] >= 2
    # the window's tokens are part of all tokens trained (the warm-up's are not in it)
    assert 0 < w["tokens"] < m["dataset_tokens"]
    assert m["dataset_tokens_per_second_stable"] == pytest.approx(
        w["tokens"] / w["seconds"], abs=0.1)


def test_two_processes_stop_at_the_same_step(workdir: Path, e2e_env: dict[str, str]) -> None:
    """DDP over 2 gloo processes: the main process's clock decides for both (a process that
    stopped alone would leave the other waiting in its next all-reduce until the timeout)."""
    d = yaml.safe_load(EXAMPLE.read_text())
    d["metadata"]["name"] = "stop-ddp"
    d["launcher"] = "accelerate"
    d["method"]["lora"]["output"] = False
    d["training"].update({"epochs": None, "max_steps": MAX_STEPS, "global_batch_size": 8,
                          "stop": {"warmup_seconds": 1, "stable_seconds": 2,
                                   "stable_steps": 3}})
    d["resources"] = {"gpus_per_node": 0, "processes_per_node": 2}
    d["distributed"] = {"strategy": "ddp"}
    d["output"]["uri"] = "file://.ftspec/runs/stop-ddp/output"
    spec = workdir / "examples" / "stop-ddp.yaml"
    spec.write_text(yaml.safe_dump(d, sort_keys=False))
    m = _apply_and_measure(workdir, e2e_env, spec.relative_to(workdir))["measured"]
    assert m["validity"] == "ok" and m["stopped_by"] == "auto" and m["devices"] == 2
    assert m["dataset_tokens_per_second_stable_per_device"] == pytest.approx(
        m["dataset_tokens_per_second_stable"] / 2, abs=0.1)
    log = (workdir / ".ftspec/runs/stop-ddp/train.log").read_text()
    assert log.count("[ftspec] stop {") == 1  # printed by the main process only
    assert "--num_processes 2" in log or "num_processes 2" in log


def test_prompt_tuning_trains_on_cpu(workdir: Path, e2e_env: dict[str, str]) -> None:
    d = yaml.safe_load(EXAMPLE.read_text())
    d["metadata"]["name"] = "tiny-pt"
    d["launcher"] = "accelerate"
    d["method"] = {"kind": "prompt_tuning", "prompt_tuning": {"num_virtual_tokens": 8}}
    d["training"].update({"epochs": None, "max_steps": 24, "learning_rate": 0.3,
                          "scheduler": {"name": "constant"}})
    d["output"]["uri"] = "file://.ftspec/runs/tiny-pt/output"
    spec = workdir / "examples" / "pt.yaml"
    spec.write_text(yaml.safe_dump(d, sort_keys=False))
    got = _apply_and_measure(workdir, e2e_env, spec.relative_to(workdir))
    assert got["measured"]["validity"] == "ok"
    log = (workdir / ".ftspec/runs/tiny-pt/train.log").read_text()
    losses = [float(v) for v in re.findall(r"\{'loss': '([\d.]+)'", log)]
    assert len(losses) == 24
    # only the 8 prompt vectors train (the tiny random model is frozen): the loss falls from
    # the random prompt's toward what the frozen model can reach
    assert sum(losses[-4:]) / 4 < losses[0] - 0.02, losses
    out = workdir / ".ftspec/runs/tiny-pt/output"
    adapter = json.loads((out / "adapter_config.json").read_text())
    assert adapter["peft_type"] == "PROMPT_TUNING" and adapter["num_virtual_tokens"] == 8
    from safetensors import safe_open

    with safe_open(str(out / "adapter_model.safetensors"), "pt") as f:
        (name,) = list(f.keys())
        assert tuple(f.get_slice(name).get_shape()) == (8, 64)  # 8 tokens x embed_dim
