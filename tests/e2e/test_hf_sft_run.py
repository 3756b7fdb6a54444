"""A real `accelerate launch` of the compiled command for a tiny CPU spec that uses a JSONL
mixture, a validation split, evaluation with early stopping and gradient clipping: ftspec's
preparation entrypoint hands the rows to TRL's SFTTrainer, whose log records are checked."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.reconciler.local.tiny import generate_tiny_assets
from ftspec.spec.validate import spec_from_data
from ftspec.targets import get_target
from helpers.accelerate_run import accelerate_env
from helpers.trainer_log import eval_records, train_records

pytestmark = pytest.mark.e2e



def tiny_spec(tmp: Path) -> dict[str, Any]:
    assets = generate_tiny_assets(tmp / "tiny", family="llama2")
    rows = [json.loads(line) for line in assets.dataset_path.read_text().splitlines()]
    words = tmp / "words.jsonl"
    words.write_text("".join(json.dumps({"body": r["input"]}) + "\n" for r in rows[:24]))
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": "tiny-mix-eval"},
        "model": {"uri": f"file://{assets.model_dir}", "dtype": "fp32",
                  "architecture": {"base": "llama2", "num_layers": 2, "num_heads": 4,
                                   "num_kv_heads": 2, "embed_dim": 64, "intermediate_dim": 128,
                                   "vocab_size": 320, "max_seq_len": 256}},
        "data": {"mixture": {"strategy": "first_exhausted", "datasets": [
            {"uri": f"file://{assets.dataset_path}", "format": "completion",
             "prompt_template": "{instruction}\n{input}\n", "completion_template": "{output}",
             "proportion": 0.75},
            {"uri": f"file://{words}", "format": "text", "text_field": "body",
             "proportion": 0.25}]},
            "validation_split_ratio": 0.25, "max_seq_len": 64},
        "method": {"kind": "lora", "lora": {"rank": 4, "alpha": 8, "dropout": 0.0}},
        "training": {"max_steps": 30, "epochs": None, "global_batch_size": 4,
                     "micro_batch_size": 4, "learning_rate": 1e-3, "max_grad_norm": 0.5,
                     "scheduler": {"name": "constant"},
                     "logging": {"steps": 1},
                     "evaluation": {"strategy": "steps", "steps": 2, "batch_size": 8},
                     "early_stopping": {"patience": 2, "threshold": 1.0},
                     "checkpointing": {"strategy": "no"}},
        "resources": {"gpus_per_node": 0},
        "output": {"uri": f"file://{tmp / 'out'}"},
        "launcher": "accelerate", "deploy": {"target": "local"},
    }


def test_compiled_accelerate_command_trains_evaluates_and_stops_early(tmp_path: Path) -> None:
    job = build_job(spec_from_data(tiny_spec(tmp_path)))
    target = get_target("accelerate")
    assert not [d for d in target.check(job) if d.is_error]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for artifact in target.compile(job):
        (run_dir / artifact.path).write_text(artifact.content)
    command = (run_dir / "command.sh").read_text()
    assert "-m ftspec.runtime.hf_sft" in command  # a mixture: TRL's CLI cannot
    assert "max_grad_norm: 0.5" in (run_dir / "sft.yaml").read_text()
    assert json.loads((run_dir / "prepare.json").read_text())["train"][1]["proportion"] == 0.25
    env = accelerate_env(tmp_path)
    run = subprocess.run(["sh", str(run_dir / "command.sh")], check=False, cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    # 64 + 24 rows mixed 3:1 until the first file runs out (64 + 21 = 85), a quarter held out
    assert "train_examples=63 eval_examples=22" in out
    train, evals = train_records(out), eval_records(out)
    # 63 rows, 4 a step: one epoch is 63/4 steps. Evaluations every 2 steps; the threshold
    # (1.0 nats) is never met, so patience 2 stops after the third evaluation, at step 6.
    assert [round((r.epoch or 0) * 63 / 4) for r in evals] == [2, 4, 6], evals
    assert len(train) == 6 and all(0 < (r.loss or 0) < 10 for r in train), train
    assert all(r.lr == 1e-3 for r in train)  # constant schedule
    adapter = json.loads((tmp_path / "out" / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and sorted(adapter["target_modules"]) == ["q_proj", "v_proj"]
    assert (tmp_path / "out" / "adapter_model.safetensors").stat().st_size > 0
    assert f"saved to {tmp_path / 'out'}" in out
