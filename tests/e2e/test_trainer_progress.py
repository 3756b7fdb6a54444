"""The progress parser on the Hugging Face trainer's real log records (the records TRL's
SFTTrainer inherits): a tiny causal-LM run of transformers' own ``Trainer`` on CPU, its
stdout fed to ``progress.Tracker`` as a backend's wait loop would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ftspec.reconciler.local.tiny import TinyAssets
from ftspec.reconciler.progress import Tracker, progress_line

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCRIPT = r"""
import sys, torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
torch.manual_seed(0)
rows = [{"input_ids": torch.randint(3, 300, (32,))} for _ in range(16)]
data = [{**r, "labels": r["input_ids"].clone()} for r in rows]
args = TrainingArguments(output_dir=sys.argv[2], per_device_train_batch_size=4,
                         num_train_epochs=2, learning_rate=1e-2, logging_steps=1,
                         lr_scheduler_type="linear", warmup_steps=1, report_to=[],
                         save_strategy="no", use_cpu=True, disable_tqdm=True, seed=0)
Trainer(model=model, args=args, train_dataset=data).train()
"""


def test_tracker_reads_the_trainers_log_records(tiny_assets: TinyAssets, tmp_path: Path
                                                ) -> None:
    pytest.importorskip("transformers")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tiny_assets.model_dir),
                           str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "{'loss': " in done.stdout, done.stdout[-2000:]  # the trainer's own record
    tracker = Tracker(total_steps=8, steps_per_epoch=4, logging_steps=1)
    tracker.feed((done.stdout + done.stderr).splitlines())
    assert [p.step for p in tracker.points] == list(range(1, 9))
    assert all(p.loss is not None and p.loss > 0 for p in tracker.points)
    assert tracker.points[0].epoch == 0.25 and tracker.points[-1].epoch == 2.0
    assert all(p.lr is not None for p in tracker.points)
    lrs = [p.lr or 0.0 for p in tracker.points]
    assert max(lrs) == 0.01, lrs
    peak = lrs.index(0.01)  # warm-up, then the linear decay
    assert lrs[peak:] == sorted(lrs[peak:], reverse=True), lrs
    assert "train_runtime" in tracker.final and "train_loss" in tracker.final
    assert progress_line(tracker.event()).startswith("step 8/8 (100%) · epoch 2 · loss ")
