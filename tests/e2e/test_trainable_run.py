"""LoRA+ and layer freezing (``method.lora.loraplus_lr_ratio``, ``method.unfrozen_parameters``)
on the accelerate launcher: the compiled command trains a tiny CPU model through ftspec's
entrypoint, and the saved adapter shows what trained; the LoRA+ optimizer TRL's trainer gets
is checked group by group."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.spec.validate import spec_from_data
from ftspec.targets import get_target
from helpers.accelerate_run import accelerate_env

pytestmark = pytest.mark.e2e

LAYER_1 = r"^base_model\.model\.model\.layers\.1\..*lora_"


def _spec(tmp: Path, method: dict[str, Any]) -> dict[str, Any]:
    from ftspec.reconciler.local.tiny import generate_tiny_assets

    assets = generate_tiny_assets(tmp / "tiny", family="llama2")
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune",
        "metadata": {"name": "tiny-trainable"},
        "model": {"uri": f"file://{assets.model_dir}", "dtype": "fp32",
                  "architecture": {"base": "llama2", "num_layers": 2, "num_heads": 4,
                                   "num_kv_heads": 2, "embed_dim": 64, "intermediate_dim": 128,
                                   "vocab_size": 320, "max_seq_len": 256}},
        "data": {"train": {"uri": f"file://{assets.dataset_path}", "format": "completion",
                           "prompt_template": "{instruction}\n{input}\n",
                           "completion_template": "{output}"}, "max_seq_len": 64},
        "method": method,
        "training": {"max_steps": 4, "epochs": None, "global_batch_size": 4,
                     "micro_batch_size": 4, "learning_rate": 1e-2,
                     "scheduler": {"name": "constant"}, "logging": {"steps": 1},
                     "checkpointing": {"strategy": "no"}},
        "resources": {"gpus_per_node": 0},
        "output": {"uri": f"file://{tmp / 'out'}"},
        "launcher": "accelerate", "deploy": {"target": "local"},
    }


def _compile(spec: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    job = build_job(spec_from_data(spec))
    target = get_target("accelerate")
    assert not [d for d in target.check(job) if d.is_error]
    run_dir.mkdir()
    for artifact in target.compile(job):
        (run_dir / artifact.path).write_text(artifact.content)
    prepare: dict[str, Any] = json.loads((run_dir / "prepare.json").read_text())
    return prepare


def test_frozen_layers_stay_untrained_in_a_compiled_run(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"kind": "lora", "lora": {"rank": 4, "alpha": 8, "dropout": 0.0},
                            "unfrozen_parameters": [LAYER_1]})
    prepare = _compile(spec, tmp_path / "run")
    assert prepare["trainable"] == {"unfrozen_parameters": [LAYER_1]}
    run = subprocess.run(["sh", str(tmp_path / "run" / "command.sh")], check=False,
                         cwd=tmp_path, env=accelerate_env(tmp_path), capture_output=True,
                         text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    # 2 layers x 2 target modules (q, v) x (A, B): layer 1's four tensors train
    assert "[ftspec] unfrozen_parameters: 4 of " in out
    from safetensors.torch import load_file

    adapter = load_file(str(tmp_path / "out" / "adapter_model.safetensors"))
    b = {k: v for k, v in adapter.items() if "lora_B" in k}
    assert len(b) == 4
    # PEFT starts B at zero: a frozen layer's B is still zero, a trained one's is not
    assert all(v.abs().sum() == 0 for k, v in b.items() if ".layers.0." in k), b.keys()
    assert all(v.abs().sum() > 0 for k, v in b.items() if ".layers.1." in k), b.keys()


def test_loraplus_optimizer_groups(tmp_path: Path) -> None:
    """The trainer class the entrypoint builds for LoRA+ gives B matrices the ratio's
    learning rate, A matrices the base rate, with the optimizer sft.yaml names."""
    from ftspec.runtime.hf_sft.trainable import trainer_class
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    spec = _spec(tmp_path, {"kind": "lora", "lora": {"rank": 4, "alpha": 8, "dropout": 0.0,
                                                     "loraplus_lr_ratio": 16}})
    prepare = _compile(spec, tmp_path / "run")
    assert prepare["trainable"] == {"loraplus_lr_ratio": 16.0}
    model_dir = spec["model"]["uri"].removeprefix("file://")
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir),
                           LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    from datasets import Dataset

    cls = trainer_class(prepare["trainable"], SFTTrainer)
    args = SFTConfig(output_dir=str(tmp_path / "o"), learning_rate=1e-3, weight_decay=0.1,
                     use_cpu=True, report_to=[], optim="adamw_torch")
    trainer = cls(model=model, args=args, train_dataset=Dataset.from_list([{"text": "a b"}]))
    optimizer = trainer.create_optimizer()
    assert type(optimizer).__name__ == "AdamW"
    names = {id(p): n for n, p in model.named_parameters()}
    rates = {names[id(p)].split(".")[-3]: g["lr"] for g in optimizer.param_groups
             for p in g["params"]}
    assert rates == {"lora_A": 1e-3, "lora_B": 1e-3 * 16}
    decay = {names[id(p)].split(".")[-3]: g["weight_decay"] for g in optimizer.param_groups
             for p in g["params"]}
    assert decay == {"lora_A": 0.1, "lora_B": 0.1}
