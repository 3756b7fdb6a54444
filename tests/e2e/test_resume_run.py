"""training.checkpointing.resume_from on the accelerate launcher, run for real: run A trains a
tiny model for 6 steps and checkpoints every 2; run B is the same spec resumed from A's
checkpoint-2 into a fresh output folder. B must continue A exactly.

Three cases, one per way the accelerate target runs TRL's SFTTrainer and one per form of the
field the compiler maps: full fine-tuning of a ``text`` dataset through TRL's own ``trl sft``
script, resumed from a ``file://`` URI; LoRA on the Alpaca rows through ftspec's preparation
entrypoint, resumed from a plain path; and that LoRA run on two processes (DDP over gloo,
``processes_per_node: 2``, micro batch 2 on each), whose checkpoint holds one RNG state per
process. Both entrypoints hand ``resume_from_checkpoint`` to ``Trainer.train``, which
restores the weights (or the adapter), the optimizer, the scheduler, the RNG states and the
trainer state, and skips the batches already trained on.

What "exactly" means here, and why it can be asked for: CPU, fp32, no dropout (LoRA dropout
0, the tiny Llama has none), a fixed seed; with two processes, gloo's all-reduce of two ranks'
gradients adds them in one fixed order. The sampler's order comes from the seed, the resumed
data loader skips the 2 steps' batches, and the forward and backward passes are the same
operations on the same tensors — so B's steps 3..6 are bit-for-bit A's: the full
precision losses, gradient norms and learning rates in the trainers' ``trainer_state.json``
histories are equal, and so are the final weights. No tolerance is needed; a difference would
be a resume that lost something.

One logged figure does not carry over: TRL's ``num_tokens`` counts tokens since the trainer
object was made (``SFTTrainer._total_train_tokens``, not saved in the checkpoint), so B's
counts start again from 0. Their per-step increments are A's, which shows B trained on the same
batches.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.reconciler.local.tiny import TinyAssets
from ftspec.reconciler.progress import Tracker
from ftspec.spec.validate import spec_from_data
from helpers.accelerate_run import accelerate_env
from helpers.tinyspec import compile_to
from helpers.trainer_log import train_records

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

STEPS_PER_EPOCH = 16  # the 64 tiny rows, 4 a step
PEAK_LR = 1e-3


def _spec(assets: TinyAssets, data: dict[str, Any], method: str, out: Path,
          resume_from: str | None, processes: int = 1) -> dict[str, Any]:
    lora = {"lora": {"rank": 4, "alpha": 8, "dropout": 0.0}} if method == "lora" else {}
    checkpointing: dict[str, Any] = {"strategy": "steps", "steps": 2}
    if resume_from is not None:
        checkpointing["resume_from"] = resume_from
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "resume"},
        "model": {"uri": f"file://{assets.model_dir}", "dtype": "fp32",
                  "architecture": {"base": "llama2", **assets.dims}},
        # 256: no Alpaca row is cut down to the template's preamble, so batches differ
        "data": {"train": data, "max_seq_len": 256},
        "method": {"kind": method, **lora},
        "training": {"max_steps": 6, "epochs": None, "global_batch_size": 4,
                     "micro_batch_size": 4 // processes, "learning_rate": PEAK_LR, "seed": 7,
                     # warm-up to the peak at step 3, then cosine decay: every step's lr differs
                     "scheduler": {"name": "cosine", "warmup_steps": 2},
                     "logging": {"steps": 1}, "checkpointing": checkpointing},
        "resources": {"gpus_per_node": 0, "processes_per_node": processes},
        "output": {"uri": f"file://{out}"},
        "launcher": "accelerate", "deploy": {"target": "local"},
    }


def _launch(spec: dict[str, Any], run_dir: Path, cwd: Path) -> tuple[str, dict[str, Any]]:
    """The compiled command's output, and the sft.yaml it ran."""
    import yaml

    files = compile_to(build_job(spec_from_data(spec)), "accelerate", run_dir)
    done = subprocess.run(["sh", str(files["command.sh"])], check=False, cwd=cwd,
                          env=accelerate_env(cwd), capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    return out, yaml.safe_load(files["sft.yaml"].read_text())


def _history(checkpoint: Path) -> dict[int, dict[str, float]]:
    """The trainer's full-precision training records by step (trainer_state.json)."""
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    return {r["step"]: r for r in state["log_history"] if "loss" in r}


def _weights(folder: Path, method: str) -> dict[str, Any]:
    from safetensors.torch import load_file

    name = "adapter_model.safetensors" if method == "lora" else "model.safetensors"
    return load_file(folder / name)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    import torch

    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _text_rows(assets: TinyAssets, dest: Path) -> Path:
    rows = [json.loads(line) for line in assets.dataset_path.read_text().splitlines()]
    dest.write_text("".join(json.dumps({"text": f"{r['instruction']} {r['input']} {r['output']}"})
                            + "\n" for r in rows))
    return dest


@pytest.mark.parametrize("case", ["full-trl-uri", "lora-entrypoint-path",
                                  "lora-entrypoint-path-2proc"])
def test_resumed_run_continues_the_first_exactly(case: str, tiny_assets: TinyAssets,
                                                 tmp_path: Path) -> None:
    method = case.split("-")[0]
    processes = 2 if case.endswith("2proc") else 1
    if method == "full":
        data = {"uri": f"file://{_text_rows(tiny_assets, tmp_path / 'text.jsonl')}",
                "format": "text"}
    else:
        data = {"uri": f"file://{tiny_assets.dataset_path}", "format": "alpaca"}
    out_a, out_b = tmp_path / "out-a", tmp_path / "out-b"
    checkpoint_2 = out_a / "checkpoint-2"
    resume = f"file://{checkpoint_2}" if case.endswith("uri") else str(checkpoint_2)

    log_a, sft_a = _launch(_spec(tiny_assets, data, method, out_a, None, processes),
                           tmp_path / "a", tmp_path)
    module = "trl.scripts.sft" if method == "full" else "ftspec.runtime.hf_sft"
    assert f"-m {module}" in (tmp_path / "a" / "command.sh").read_text()
    assert "resume_from_checkpoint" not in sft_a
    assert {p.name for p in out_a.glob("checkpoint-*")} == {f"checkpoint-{s}" for s in (2, 4, 6)}
    # what Trainer.train(resume_from_checkpoint=...) reads besides the weights
    rng = {"rng_state.pth"} if processes == 1 else {f"rng_state_{r}.pth"  # one per process
                                                      for r in range(processes)}
    assert {"optimizer.pt", "scheduler.pt", "trainer_state.json", *rng} <= {
        p.name for p in checkpoint_2.iterdir()}
    a = train_records(log_a)
    assert len(a) == 6, log_a[-3000:]

    log_b, sft_b = _launch(_spec(tiny_assets, data, method, out_b, resume, processes),
                           tmp_path / "b", tmp_path)
    assert sft_b["resume_from_checkpoint"] == str(checkpoint_2)
    b = train_records(log_b)

    # B's own log: four steps, the trainer's epochs placing them at 3..6 (not 1..4)
    assert len(b) == 4, log_b[-3000:]
    tracker = Tracker(total_steps=6, steps_per_epoch=STEPS_PER_EPOCH, logging_steps=1)
    tracker.feed(log_b.splitlines())
    assert [p.step for p in tracker.points] == [3, 4, 5, 6]
    assert [r.epoch for r in b] == [r.epoch for r in a[2:]] == [s / STEPS_PER_EPOCH
                                                               for s in (3, 4, 5, 6)]
    # and its checkpoints: steps 4 and 6 only
    assert {p.name for p in out_b.glob("checkpoint-*")} == {"checkpoint-4", "checkpoint-6"}

    # the scheduler came back: B's first step has the peak lr of A's step 3, not step 1's 0
    assert a[0].lr == 0.0 and b[0].lr == a[2].lr == PEAK_LR
    assert [(r.loss, r.lr) for r in b] == [(r.loss, r.lr) for r in a[2:]]  # as logged

    # at full precision: B's records of steps 3..6 are A's (the state carries A's 1..2)
    hist_a, hist_b = _history(out_a / "checkpoint-6"), _history(out_b / "checkpoint-6")
    assert sorted(hist_b) == list(range(1, 7))
    tokens = [hist_a[s]["num_tokens"] - hist_a.get(s - 1, {"num_tokens": 0})["num_tokens"]
              for s in range(1, 7)]
    assert len(set(tokens)) > 1, tokens  # the batches differ: their order can be checked
    for step in (3, 4, 5, 6):
        for key in ("loss", "grad_norm", "learning_rate", "epoch"):
            assert hist_b[step][key] == hist_a[step][key], (step, key, hist_a, hist_b)
        # TRL's token count restarts with the trainer; the batches are the same
        assert hist_b[step]["num_tokens"] == hist_a[step]["num_tokens"] - hist_a[2]["num_tokens"]
    print(f"\n{case}: step, A loss, B loss, lr")
    for step in range(1, 7):
        mine = f"{hist_b[step]['loss']:.9f}" if step >= 3 else "-"
        print(step, f"{hist_a[step]['loss']:.9f}", mine, hist_a[step]["learning_rate"])

    # the weights: B trained on from checkpoint-2 and ended where A ended, bit for bit
    final_a, final_b = _weights(out_a, method), _weights(out_b, method)
    assert not _same(final_b, _weights(checkpoint_2, method))
    assert _same(final_b, final_a)
    assert _same(_weights(out_b / "checkpoint-4", method), _weights(out_a / "checkpoint-4", method))
