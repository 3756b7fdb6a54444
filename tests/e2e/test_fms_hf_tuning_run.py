"""A real run of the fms_hf_tuning launcher's compiled command on CPU: ``accelerate launch -m
tuning.sft_trainer`` with the SFTTrainer seed's flags trains the tiny llama2 model (full
fine-tuning) on text rows with a response template, and its log records show the loss fall.

fms-hf-tuning 3.2.2 runs from the folder ``helpers.fms_site`` lays over ftspec's environment
(its pins clash with transformers 5 / TRL 1). Full fine-tuning, not LoRA: PEFT 0.19 (its pin)
refuses the torchao 0.15 that torchtune's extra installs here ("only versions above 0.16.0
are supported") as soon as it wraps a layer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.reconciler.local.tiny import generate_tiny_assets
from ftspec.spec.validate import spec_from_data
from ftspec.targets import get_launcher
from helpers import fms_site
from helpers.accelerate_run import accelerate_env
from helpers.trainer_log import train_records

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def tiny_spec(tmp: Path) -> dict[str, Any]:
    assets = generate_tiny_assets(tmp / "tiny", family="llama2")
    rows = [json.loads(line) for line in assets.dataset_path.read_text().splitlines()]
    text = tmp / "text.jsonl"
    text.write_text("".join(json.dumps({"text": f"### Instruction:\n{r['instruction']}\n"
                                        f"{r['input']}\n### Response:\n{r['output']}"}) + "\n"
                            for r in rows))
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": "fms-tiny"},
        "model": {"uri": f"file://{assets.model_dir}", "dtype": "fp32",
                  "architecture": {"num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
                                   "embed_dim": 64, "intermediate_dim": 128,
                                   "vocab_size": 320, "max_seq_len": 256}},
        "data": {"train": {"uri": f"file://{text}", "format": "text", "text_field": "text",
                           "response_template": "\n### Response:"}, "max_seq_len": 128},
        "method": {"kind": "full"},
        "training": {"epochs": 1, "global_batch_size": 4, "micro_batch_size": 4,
                     "learning_rate": 1e-2, "scheduler": {"name": "cosine", "warmup_ratio": 0.1},
                     "logging": {"steps": 1}, "gradient_checkpointing": False,
                     "checkpointing": {"strategy": "no"}, "seed": 42},
        "resources": {"gpus_per_node": 0},
        "output": {"uri": f"file://{tmp / 'out'}"},
        "launcher": "fms_hf_tuning", "deploy": {"target": "local"},
    }


def test_compiled_fms_hf_tuning_command_trains_on_cpu(tmp_path: Path) -> None:
    site = fms_site.site(fms_site.TRAINING)
    job = build_job(spec_from_data(tiny_spec(tmp_path)))
    launcher = get_launcher("fms_hf_tuning")
    assert not [d for d in launcher.check(job) if d.is_error]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for artifact in launcher.compile(job):
        (run_dir / artifact.path).write_text(artifact.content)
    command = (run_dir / "command.sh").read_text()
    assert "-m tuning.sft_trainer" in command and "--peft_method none" in command
    env = accelerate_env(tmp_path, PYTHONPATH=os.pathsep.join(
        filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    run = subprocess.run(["sh", str(run_dir / "command.sh")], check=False, cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    train = train_records(out)
    # 64 rows, 4 a step, one epoch: 16 steps, each logged (--logging_strategy steps)
    assert len(train) == 16, [r.loss for r in train]
    losses = [r.loss or 0.0 for r in train]
    assert sum(losses[-4:]) / 4 < sum(losses[:4]) / 4 - 0.5, losses
    logged = (tmp_path / "out" / "training_logs.jsonl").read_text().splitlines()
    assert len(logged) == 16 and json.loads(logged[-1])["data"]["step"] == 16
