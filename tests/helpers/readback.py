"""Read the effective hyperparameters back out of compiled artifacts, one reader per target.

Each reader takes ``{file name: content}`` and returns the same normalized quantities, so a
test can check that every target runs the same training (and matches `ftspec explain`).
Platform readers (kubeflow, kuberay, ray) live in ``readback_platforms`` and reuse these.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from ruamel.yaml import YAML

MLP = ["gate_proj", "up_proj", "down_proj"]
TT_OPTIMIZERS = {"torch.optim.AdamW": "adamw", "torch.optim.Adam": "adam",
                 "torch.optim.SGD": "sgd", "torch.optim.RMSprop": "rmsprop",
                 "bitsandbytes.optim.AdamW8bit": "adamw_8bit",
                 "bitsandbytes.optim.PagedAdamW8bit": "paged_adamw_8bit",
                 "bitsandbytes.optim.PagedAdamW": "paged_adamw_32bit"}
HF_OPTIMIZERS = {"adamw_torch": "adamw", "adamw_torch_fused": "adamw", "adam": "adam", "sgd": "sgd",
                 "adafactor": "adafactor", "adamw_bnb_8bit": "adamw_8bit",
                 "paged_adamw_8bit": "paged_adamw_8bit", "paged_adamw_32bit": "paged_adamw_32bit",
                 "lion_32bit": "lion", "rmsprop": "rmsprop"}


def normalize_scheduler(name: str) -> str:
    return "constant" if name in ("constant", "constant_with_warmup") else name


def _exec_argv(script: str) -> list[str]:
    text = "\n" + script.replace("\\\n", " ")
    start = text.rindex("\nexec ") + 1  # the last command; quoted values may span lines
    return shlex.split(text[start:])[1:]


def _flags(argv: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    key = None
    for tok in argv:
        if tok.startswith("--"):
            key = tok[2:]
            out[key] = []
        elif key is not None:
            out[key].append(tok)
    return out


def read_torchtune(files: dict[str, str]) -> dict[str, Any]:
    cfg = YAML(typ="safe", pure=True).load(files["config.yaml"])
    argv = _exec_argv(files["command.sh"])
    flags = _flags(argv[: argv.index("--config")])
    world = int(flags.get("nnodes", ["1"])[0]) * int(flags.get("nproc-per-node", ["1"])[0])
    epochs, per_epoch = cfg["epochs"], cfg["max_steps_per_epoch"]
    sched = cfg["lr_scheduler"]
    assert sched["_component_"].endswith("get_cosine_schedule_with_warmup")
    model = cfg["model"]
    lora = None
    if "lora_rank" in model:
        modules = ["o_proj" if m == "output_proj" else m for m in model["lora_attn_modules"]]
        if model.get("apply_lora_to_mlp"):
            modules += MLP
        lora = {"rank": model["lora_rank"], "alpha": float(model["lora_alpha"]),
                "target_modules": modules}
    return {
        "learning_rate": float(cfg["optimizer"]["lr"]),
        "effective_batch": cfg["batch_size"] * cfg["gradient_accumulation_steps"] * world,
        "duration": duration(epochs, None, per_epoch),
        "precision": f"{cfg['dtype']} pure",  # torchtune has no autocast: always pure
        "sequence_length": cfg["tokenizer"]["max_seq_len"],
        "lora": lora,
        "optimizer": TT_OPTIMIZERS[cfg["optimizer"]["_component_"]],
        "scheduler": "cosine" if float(sched.get("num_cycles", 0.5)) > 0 else "constant",
        "warmup_steps": sched["num_warmup_steps"],
    }


def read_accelerate(files: dict[str, str]) -> dict[str, Any]:
    import yaml  # accelerate's own loader reads its file with PyYAML

    cfg = yaml.safe_load(files["accelerate.yaml"])
    sft = yaml.safe_load(files["sft.yaml"])  # TRL's own config
    argv = _exec_argv(files["command.sh"])
    f = _flags(argv)
    world = int(f["num_processes"][0]) if "num_processes" in f else cfg["num_processes"]
    assert world == cfg["num_processes"], "command and config disagree on processes"
    # mixed: TRL's bf16/fp16 autocast over fp32 weights (a quantized base loads in bnb's
    # compute dtype); pure: the weights load in the dtype and nothing autocasts; autocast:
    # 16-bit weights under autocast of their dtype (bf16, or fp16 under PEFT's fp32
    # adapters); over a bitsandbytes base, where it trains as mixed does, the two read alike
    autocast = "bf16" if sft.get("bf16") else "fp16" if sft.get("fp16") else None
    assert (autocast or "no") == cfg["mixed_precision"], "TRL and accelerate disagree"
    loaded = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}[sft["dtype"]]
    if autocast is None:
        precision = f"{loaded} pure"
    elif loaded == "fp32" or sft.get("load_in_4bit") or sft.get("load_in_8bit"):
        precision = f"{autocast} mixed"
    else:
        assert loaded == autocast, "autocast over weights of another dtype"
        precision = f"{autocast} autocast"
    lora = None
    if sft.get("use_peft"):  # the LoRA family (lora, dora, qlora)
        lora = {"rank": int(sft["lora_r"]), "alpha": float(sft["lora_alpha"]),
                "target_modules": [m for m in sft["lora_target_modules"] if m != "lm_head"]}
    return {
        "learning_rate": float(sft["learning_rate"]),
        "effective_batch": int(sft["per_device_train_batch_size"])
        * int(sft["gradient_accumulation_steps"]) * world,
        "duration": duration(int(sft["num_train_epochs"]) if "num_train_epochs" in sft
                             else None, sft.get("max_steps"), None),
        "precision": precision,
        "sequence_length": int(sft["max_length"]),
        "lora": lora,
        "optimizer": HF_OPTIMIZERS[sft["optim"]],
        "scheduler": normalize_scheduler(sft["lr_scheduler_type"]),
        "warmup_steps": int(sft.get("warmup_steps", 0)),
    }


def read_fms_hf_tuning(files: dict[str, str]) -> dict[str, Any]:
    """fms-hf-tuning's flags after ``-m tuning.sft_trainer``, and accelerate's config."""
    import yaml

    cfg = yaml.safe_load(files["accelerate.yaml"])
    argv = _exec_argv(files["command.sh"])
    at = argv.index("tuning.sft_trainer")
    launch, f = _flags(argv[:at]), {k: v[0] if len(v) == 1 else v
                                     for k, v in _flags(argv[at + 1:]).items()}
    world = int(launch["num_processes"][0]) if "num_processes" in launch \
        else cfg["num_processes"]
    assert world == cfg["num_processes"], "command and config disagree on processes"
    autocast = "bf16" if f.get("bf16") == "True" else "fp16" if f.get("fp16") == "True" else None
    assert (autocast or "no") == cfg["mixed_precision"], "fms-hf-tuning and accelerate disagree"
    loaded = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}[f["torch_dtype"]]
    lora = None
    if f["peft_method"] == "lora":
        modules = f["target_modules"] if isinstance(f["target_modules"], list) \
            else [f["target_modules"]]
        lora = {"rank": int(f["r"]), "alpha": float(f["lora_alpha"]),
                "target_modules": [m for m in modules if m != "lm_head"]}
    return {
        "learning_rate": float(f["learning_rate"]),
        "effective_batch": int(f["per_device_train_batch_size"])
        * int(f["gradient_accumulation_steps"]) * world,
        "duration": duration(int(f["num_train_epochs"]) if "num_train_epochs" in f else None,
                             int(f["max_steps"]) if "max_steps" in f else None, None),
        "precision": f"{loaded} pure" if autocast is None else
        f"{autocast} {'mixed' if loaded == 'fp32' else 'autocast'}",
        "sequence_length": int(f["max_seq_length"]),
        "lora": lora,
        "optimizer": HF_OPTIMIZERS[f["optim"]],
        "scheduler": normalize_scheduler(f["lr_scheduler_type"]),
        "warmup_steps": int(f.get("warmup_steps", 0)),
    }


def duration(epochs: int | None, max_steps: int | None, per_epoch_cap: int | None) -> str:
    """One spelling for "how long": a step bound when there is one, else epochs.

    torchtune expresses max_steps as one epoch capped at N steps, so both read as
    ``steps<=N``; a cap over several epochs bounds the run at epochs x cap.
    """
    if max_steps is not None:
        return f"steps<={max_steps}"
    if per_epoch_cap is not None:
        return f"steps<={(epochs or 1) * per_epoch_cap}"
    return f"epochs={epochs}"


def _readers() -> dict[str, Callable[[dict[str, str]], dict[str, Any]]]:
    from helpers.readback_platforms import read_kubeflow, read_kuberay, read_ray

    return {"torchtune": read_torchtune, "accelerate": read_accelerate,
            "fms_hf_tuning": read_fms_hf_tuning,
            "kubeflow": read_kubeflow, "kuberay": read_kuberay, "ray": read_ray}


READERS = _readers()


def from_explain(data: dict[str, Any]) -> dict[str, Any]:
    """The same quantities from `ftspec explain --json`."""
    d = data["derived"]
    lora = d["lora"]
    return {
        "learning_rate": d["learning_rate"],
        "effective_batch": d["global_batch_size"],
        "duration": duration(d["epochs"], d["max_steps"], d["max_steps_per_epoch"]),
        "precision": f"{d['precision']} {d['precision_mode']}",
        "sequence_length": d["max_seq_len"],
        "lora": None if lora is None else {"rank": lora["rank"], "alpha": float(lora["alpha"]),
                                           "target_modules": lora["target_modules"]},
        "optimizer": d["optimizer"],
        "scheduler": normalize_scheduler(d["scheduler"]),
        "warmup_steps": d["warmup_steps"] or 0,
    }
