"""A real expert-parallel run: the compiled accelerate command trains a tiny Qwen3-MoE model
(4 experts) over 2 CPU processes (gloo) with distributed.expert_parallel: 2. transformers
shards it while loading (sft.yaml's distributed_config): each process holds 2 of each layer's
4 experts, which a probe launched with the same compiled files shows, and the run trains all 4,
saves weights-only checkpoints and the gathered model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.spec.validate import spec_from_data
from ftspec.targets import get_target
from helpers.accelerate_run import accelerate_env
from helpers.tiny_moe import ARCHITECTURE, NUM_EXPERTS, tiny_moe
from helpers.trainer_log import train_records

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROBE = """
import json, os, sys
import yaml
from transformers import AutoModelForCausalLM
sft = yaml.safe_load(open(sys.argv[1]))
model = AutoModelForCausalLM.from_pretrained(sft["model_name_or_path"],
                                             **sft["model_init_kwargs"])
whole = AutoModelForCausalLM.from_pretrained(sft["model_name_or_path"])
mine = model.model.layers[0].mlp.experts.down_proj
local = mine.to_local()
full = whole.model.layers[0].mlp.experts.down_proj
held = [e for e in range(full.shape[0]) for j in range(local.shape[0])
        if bool((local[j] == full[e]).all())]
rank = int(os.environ["RANK"])
with open(f"{sys.argv[2]}/probe-{rank}.json", "w") as out:  # one file a rank: no interleaving
    json.dump({"rank": rank, "global": list(mine.shape), "local": list(local.shape),
               "experts": held}, out)
"""


def moe_spec(tmp: Path) -> dict[str, Any]:
    model_dir, assets = tiny_moe(tmp / "tiny")
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": "tiny-moe-ep"},
        "model": {"uri": f"file://{model_dir}", "dtype": "fp32", "architecture": ARCHITECTURE},
        "data": {"train": {"uri": f"file://{assets.dataset_path}", "format": "alpaca",
                           "num_examples": 64}, "max_seq_len": 64},
        "method": {"kind": "full"},
        "training": {"max_steps": 4, "epochs": None, "global_batch_size": 4,
                     "micro_batch_size": 2, "learning_rate": 1e-3,
                     "scheduler": {"name": "constant"}, "logging": {"steps": 1},
                     "checkpointing": {"strategy": "steps", "steps": 2},
                     "gradient_checkpointing": False},
        "resources": {"gpus_per_node": 0, "processes_per_node": 2},
        "distributed": {"expert_parallel": 2},
        "output": {"uri": f"file://{tmp / 'out'}"},
        "launcher": "accelerate", "deploy": {"target": "local"},
    }


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(argv, check=False, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    return out


def test_compiled_expert_parallel_run_splits_the_experts_and_trains(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    spec = moe_spec(tmp_path)
    job = build_job(spec_from_data(spec))
    target = get_target("accelerate")
    assert not [d.format() for d in target.check(job) if d.is_error]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for artifact in target.compile(job):
        (run_dir / artifact.path).write_text(artifact.content)
    env = accelerate_env(tmp_path, ACCELERATE_USE_CPU="true")

    # the compiled accelerate.yaml and sft.yaml, loaded as the run loads them
    (tmp_path / "probe.py").write_text(PROBE)
    probe = run([sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch",
                 "--config_file", str(run_dir / "accelerate.yaml"), "--num_processes", "2",
                 str(tmp_path / "probe.py"), str(run_dir / "sft.yaml"), str(tmp_path)],
                tmp_path, env)
    shards = sorted((json.loads(p.read_text()) for p in tmp_path.glob("probe-*.json")),
                    key=lambda s: s["rank"])
    assert [s["rank"] for s in shards] == [0, 1], probe[-3000:]
    assert all(s["global"][0] == NUM_EXPERTS and s["local"][0] == 2 for s in shards), shards
    assert sorted(shards[0]["experts"] + shards[1]["experts"]) == list(range(NUM_EXPERTS))

    out = run(["sh", str(run_dir / "command.sh")], tmp_path, env)
    losses = [r.loss for r in train_records(out)]
    assert len(losses) == 4 and all(x is not None and 0 < x < 10 for x in losses), losses
    assert losses[-1] < losses[0], losses
    saved = tmp_path / "out"
    assert {p.name for p in saved.iterdir()} >= {"checkpoint-2", "checkpoint-4",
                                                  "model.safetensors", "config.json"}
    assert not (saved / "checkpoint-2" / "optimizer.pt").exists()  # save_only_model
    before = AutoModelForCausalLM.from_pretrained(spec["model"]["uri"].removeprefix("file://"))
    after = AutoModelForCausalLM.from_pretrained(saved)
    for layer_before, layer_after in zip(before.model.layers, after.model.layers, strict=True):
        old, new = layer_before.mlp.experts.down_proj, layer_after.mlp.experts.down_proj
        assert new.shape == old.shape  # gathered whole
        # every expert, on either process, was trained
        assert all(not torch.equal(old[e], new[e]) for e in range(NUM_EXPERTS))
