"""What both token-identity tests share: the rows, the tiny spec, torchtune's own rows.

The same rows and the same locally generated tokenizer go through torchtune's dataset builder
(as the compiled torchtune config instantiates it) and through TRL; these pieces build the
spec and read torchtune's side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ftspec.reconciler.local.tiny import TinyAssets
from ftspec.spec.ir import Job
from ftspec.targets import get_target
from ruamel.yaml import YAML

ROWS = [{"instruction": "Reverse the words.", "input": "sun moon", "output": "moon sun"},
        {"instruction": "Say hi.", "input": "", "output": "hi there"}]
TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}assistant: {% endif %}")
Rows = list[tuple[list[int], list[bool]]]


def write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f"file://{path}"


def tiny_spec(assets: TinyAssets, train: dict[str, Any], out: Path) -> dict[str, Any]:
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "tokens"},
        "model": {"uri": f"file://{assets.model_dir}", "dtype": "fp32",
                  "chat_template": TEMPLATE,
                  "tokenizer": {"uri": f"file://{assets.tokenizer_path}"},
                  "architecture": {"base": "llama2", **{k: v for k, v in assets.dims.items()}}},
        "data": {"train": train, "max_seq_len": 256, "shuffle": False},
        "method": {"kind": "lora", "lora": {"rank": 4, "alpha": 8, "dropout": 0.0}},
        "training": {"max_steps": 1, "epochs": None, "global_batch_size": 2,
                     "micro_batch_size": 2, "learning_rate": 1e-3, "seed": 0},
        "resources": {"gpus_per_node": 0}, "output": {"uri": f"file://{out}"},
        "launcher": "accelerate", "deploy": {"target": "local"}}


def torchtune_rows(job: Job) -> Rows:
    from omegaconf import OmegaConf
    from torchtune import config

    files = {a.path: a.content for a in get_target("torchtune").compile(job)}
    cfg = OmegaConf.create(YAML(typ="safe", pure=True).load(files["config.yaml"]))
    dataset = config.instantiate(cfg.dataset, config.instantiate(cfg.tokenizer))
    return [(list(r["tokens"]), [label != -100 for label in r["labels"]])
            for r in (dataset[i] for i in range(len(dataset)))]


def trl_trainer(job: Job, scratch: Path) -> Any:
    """The SFTTrainer the compiled accelerate artifacts build (``trl sft`` on sft.yaml, or
    ftspec's entrypoint handing it prepared rows), before any step."""
    import datasets
    from ftspec.runtime.hf_sft import (
        Plan,
        PrepareArguments,
        _tokenizer,
        build_data,
    )
    from transformers import AutoTokenizer
    from trl.scripts.utils import DatasetMixtureConfig, ScriptArguments, TrlParser
    from trl.trainer.model_config import ModelConfig
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer

    files = {a.path: a.content for a in get_target("accelerate").compile(job)}
    for name, text in files.items():
        (scratch / name).write_text(text)
    argv = ["--config", str(scratch / "sft.yaml")]
    if "prepare.json" in files:
        argv += ["--prepare", str(scratch / "prepare.json")]
    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig,
                        PrepareArguments))
    _, args, model_args, mixture, prep = parser.parse_args_and_config(args=argv)
    if prep.prepare:  # ftspec's entrypoint: the rows it hands to SFTTrainer
        plan = Plan.from_json(json.loads(Path(prep.prepare).read_text()))
        tokenizer = _tokenizer(plan, model_args, args)
        rows = build_data(plan, tokenizer, 0).train
    else:  # `trl sft` reads the file itself
        tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
        rows = datasets.load_dataset("json", data_files=mixture.datasets[0].data_files,
                                     split="train")
    trainer = SFTTrainer(model=model_args.model_name_or_path, args=args, train_dataset=rows,
                         processing_class=tokenizer)
    return trainer
