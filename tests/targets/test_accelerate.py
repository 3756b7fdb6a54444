"""accelerate target: its own loader reads the config back unchanged; nested keys are
real `accelerate launch` options (accelerate itself would ignore wrong ones silently)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.compiler.build import build_job
from ftspec.spec.validate import spec_from_data
from ftspec.targets.accelerate import config_text
from ftspec.targets.accelerate_config import DEEPSPEED_KEYS, FSDP_KEYS

BASE: dict[str, Any] = {
    "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "a"},
    "model": {"uri": "hf://meta-llama/Llama-3.2-1B", "family": "llama3_2-1b"},
    "data": {"train": {"uri": "file://train.jsonl"}},
    "training": {"global_batch_size": 8, "micro_batch_size": 1, "learning_rate": 1e-4},
    "launcher": "accelerate",
}
VARIANTS = {
    "single": {"resources": {"gpus_per_node": 1, "accelerator": "nvidia-a100-80gb"}},
    "cpu": {"resources": {"gpus_per_node": 0}, "model": {**BASE["model"], "dtype": "fp32"}},
    "cpu-ddp": {"resources": {"gpus_per_node": 0, "processes_per_node": 2},
                "model": {**BASE["model"], "dtype": "fp32"}},
    "ddp": {"resources": {"gpus_per_node": 4, "accelerator": "nvidia-a100-80gb"}},
    "fsdp1": {"resources": {"gpus_per_node": 4, "accelerator": "nvidia-h100-80gb"},
              "distributed": {"strategy": "fsdp", "fsdp": {"version": 1,
                                                           "sharding": "shard_grad_op"}}},
    "fsdp2": {"resources": {"gpus_per_node": 8, "accelerator": "nvidia-h100-80gb"},
              "distributed": {"strategy": "fsdp", "fsdp": {"version": 2, "cpu_offload": True}}},
    "zero3": {"resources": {"nodes": 2, "gpus_per_node": 4, "accelerator": "nvidia-a100-40gb"},
              "distributed": {"strategy": "deepspeed",
                              "deepspeed": {"stage": 3, "offload_optimizer": "cpu"}},
              "deploy": {"target": "kuberay"}, "data": {"train": {"uri": "pvc://d/t.jsonl"}}},
}


def variant(name: str) -> dict[str, Any]:
    return {**BASE, **VARIANTS[name]}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_round_trips_through_accelerates_loader(name: str, tmp_path: Path) -> None:
    from accelerate.commands.config.config_args import load_config_from_file

    text = config_text(build_job(spec_from_data(variant(name))))
    path = tmp_path / "accelerate.yaml"
    path.write_text(text)
    loaded = load_config_from_file(str(path)).to_dict()
    assert loaded == yaml.safe_load(text)


def test_distributed_types() -> None:
    types = {n: yaml.safe_load(config_text(build_job(spec_from_data(variant(n)))))
             for n in VARIANTS}
    assert types["single"]["distributed_type"] == "NO"
    assert "distributed_type: 'NO'" in config_text(build_job(spec_from_data(variant("single"))))
    assert types["cpu"]["use_cpu"] is True
    assert types["cpu-ddp"]["distributed_type"] == "MULTI_GPU" and types["cpu-ddp"]["use_cpu"]
    assert types["fsdp1"]["fsdp_config"]["fsdp_reshard_after_forward"] == "SHARD_GRAD_OP"
    assert types["fsdp2"]["fsdp_config"]["fsdp_version"] == 2
    assert types["fsdp2"]["fsdp_config"]["fsdp_offload_params"] is True
    ds = types["zero3"]["deepspeed_config"]
    assert (ds["zero_stage"], ds["offload_optimizer_device"], ds["zero3_init_flag"]) == \
        (3, "cpu", True)
    assert types["zero3"]["num_machines"] == 2 and types["zero3"]["num_processes"] == 8


@pytest.mark.slow
def test_nested_keys_are_accelerate_launch_options() -> None:
    from accelerate.commands.launch import launch_command_parser

    dests = {a.dest for a in launch_command_parser()._actions}
    assert FSDP_KEYS <= dests, sorted(FSDP_KEYS - dests)
    assert DEEPSPEED_KEYS <= dests, sorted(DEEPSPEED_KEYS - dests)


LLAMA2 = {"uri": "hf://meta-llama/Llama-2-7b-hf", "family": "llama2-7b"}
CHAT = {"uri": "file://chat.jsonl", "format": "chat"}


@pytest.mark.parametrize(("template", "layout", "assistant_only_loss"), [
    (None, "llama2", None), ("chatml", "chatml", None),
    ("{% for m in messages %}{{ m['content'] }}{% endfor %}", None, True)])
def test_chat_artifacts_follow_the_template(template: str | None, layout: str | None,
                                            assistant_only_loss: bool | None) -> None:
    """Named / own templates on a Llama 2 tokenizer: torchtune's layout in prepare.json (and
    the named template as torchtune's prompt_template); Jinja: TRL masks by the template."""
    import json

    from ftspec.targets import get_target

    model = {**LLAMA2, **({"chat_template": template} if template else {})}
    spec = {**BASE, "model": model, "data": {"train": CHAT},
            "resources": {"gpus_per_node": 1, "accelerator": "nvidia-a100-80gb"}}
    job = build_job(spec_from_data(spec))
    files = {a.path: a.content for a in get_target("accelerate").compile(job)}
    [train] = json.loads(files["prepare.json"])["train"]
    assert train.get("chat_layout") == layout
    sft = yaml.safe_load(files["sft.yaml"])
    assert sft.get("assistant_only_loss") == assistant_only_loss
    if template == "chatml":
        tt = {a.path: a.obj for a in get_target("torchtune").compile(job)}["config.yaml"]
        assert tt["tokenizer"]["prompt_template"] == "torchtune.data.ChatMLTemplate"


@pytest.mark.parametrize(("dtype", "precision", "loaded", "autocast"),
                         [("bf16", "pure", "bfloat16", "no"), ("bf16", "mixed", "float32", "bf16"),
                          ("bf16", "autocast", "bfloat16", "bf16"),
                          ("fp16", "mixed", "float32", "fp16"),
                          ("fp16", "autocast", "float16", "fp16")])
def test_precision_as_trl_and_accelerate_read_it(dtype: str, precision: str, loaded: str,
                                                 autocast: str) -> None:
    """pure bf16: TRL loads bf16 weights and nothing autocasts; mixed: fp32 weights under
    bf16 (fp16) autocast; autocast: bf16 (fp16: LoRA's) weights under bf16 (fp16) autocast;
    the same flag in TRL's config and accelerate's (read by their parsers)."""
    from helpers.trl_parse import accelerate_reads

    trl = pytest.importorskip("trl")
    from ftspec.targets import get_target
    from transformers import HfArgumentParser

    spec = variant("single")
    spec["model"] = {**BASE["model"], "dtype": dtype, "precision": precision}
    files = {a.path: a.content for a in get_target("accelerate").compile(
        build_job(spec_from_data(spec)))}
    raw = yaml.safe_load(files["sft.yaml"])
    raw["use_cpu"] = True  # TrainingArguments checks bf16 against this machine's GPU
    sft, model = HfArgumentParser((trl.SFTConfig, trl.ModelConfig)).parse_dict(
        raw, allow_extra_keys=True)
    assert spec_from_data(spec).method.kind == "lora"  # fp16 autocast: fp32 adapters
    assert (model.dtype, sft.bf16, sft.fp16) == (loaded, autocast == "bf16", autocast == "fp16")
    assert accelerate_reads(files["accelerate.yaml"])["mixed_precision"] == autocast


@pytest.mark.parametrize(("dtype", "precision", "computes"),
                         [("fp16", "mixed", "fp32"), ("fp16", "autocast", "fp16"),
                          ("bf16", "autocast", None), ("bf16", "mixed", None),
                          ("fp16", None, "fp32")])
@pytest.mark.parametrize("target", ["accelerate", "fms_hf_tuning"])
def test_fp16_autocast_on_cpu_is_warned(target: str, dtype: str, precision: str | None,
                                        computes: str | None) -> None:
    """accelerate enables fp16 autocast and the GradScaler only off CPU, so a CPU run asked
    for fp16 autocast computes in the weights' dtype: a warning at model.dtype says which
    (the e2e precision run shows no autocast and no scaler on CPU); bf16 autocast runs."""
    from ftspec.targets import get_target

    spec = variant("cpu")
    spec["model"] = {**BASE["model"], "dtype": dtype,
                     **({"precision": precision} if precision else {})}
    job = build_job(spec_from_data(spec))
    found = [d for d in get_target(target).check(job) if d.code.endswith(".fp16-cpu")]
    if computes is None:
        assert found == []
    else:
        [d] = found
        assert d.path == ("model", "dtype") and d.severity.value == "warning"
        assert f"computes every op in {computes}" in d.summary
