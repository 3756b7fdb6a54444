"""One optimizer step of the tiny model through each launcher on the same rows (format: text,
whose token ids and masks are identical under both: test_token_identity), same seed, fp32
on CPU: the step-1 losses agree.

Tolerance 1e-3 (absolute): transformers prints the loss to 4 significant digits ('5.818'),
so the comparison cannot be finer than half a unit there (5e-4). Both launchers load the same weights, and LoRA starts with B = 0
(torchtune and PEFT alike), so the first forward pass is the base model's on the same tokens
in the same order (shuffle: false); both average the cross-entropy over the batch's label
tokens. What is left is float32 summation order in two implementations of the same Llama
forward (the tiny-asset tests bound the logit difference by 1e-4).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from ftspec.compiler.build import build_job
from ftspec.reconciler.local.tiny import TinyAssets
from ftspec.spec.validate import spec_from_data
from helpers.measure import run_measured
from helpers.tinyspec import compile_to
from helpers.trainer_log import records

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TEXTS = ["sun moon star river", "the dog runs to the river", "moon sun", "stars over the sea"]


def _job(assets: TinyAssets, data: Path, out: Path, launcher: str):  # type: ignore[no-untyped-def]
    return build_job(spec_from_data({
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "one-step"},
        "model": {"uri": f"file://{assets.model_dir}", "dtype": "fp32",
                  "architecture": {"base": "llama2", **assets.dims}},
        "data": {"train": {"uri": f"file://{data}", "format": "text"}, "max_seq_len": 64,
                 "shuffle": False},
        "method": {"kind": "lora", "lora": {"rank": 4, "alpha": 8, "dropout": 0.0,
                                            "target_modules": ["q_proj", "v_proj"]}},
        "training": {"max_steps": 1, "epochs": None, "global_batch_size": 4,
                     "micro_batch_size": 4, "learning_rate": 1e-3, "seed": 0,
                     "scheduler": {"name": "constant"}, "logging": {"steps": 1},
                     "gradient_checkpointing": False, "checkpointing": {"strategy": "no"}},
        "resources": {"gpus_per_node": 0}, "output": {"uri": f"file://{out}"},
        "launcher": launcher, "deploy": {"target": "local"}}))


def test_one_step_same_loss(tiny_assets: TinyAssets, tmp_path: Path,
                            e2e_env: dict[str, str]) -> None:
    data = tmp_path / "text.jsonl"
    data.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    losses = {}
    for launcher in ("torchtune", "accelerate"):
        job = _job(tiny_assets, data, tmp_path / f"out-{launcher}", launcher)
        files = compile_to(job, launcher, tmp_path / launcher)
        run = run_measured(f"one_step_{launcher}", ["sh", str(files["command.sh"])],
                           cwd=tmp_path, env=e2e_env)
        assert run.returncode == 0, run.output[-4000:]
        first = [r.loss for r in records(run.output) if r.loss is not None]
        assert first, run.output[-3000:]
        losses[launcher] = first[0]
    print(f"[same-loss] step 1: torchtune {losses['torchtune']!r}, "
          f"TRL {losses['accelerate']!r}")
    assert math.isclose(losses["torchtune"], losses["accelerate"], abs_tol=1e-3), losses
