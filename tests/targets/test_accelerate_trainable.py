"""LoRA+, layer freezing and 8-bit bases on the accelerate launcher: what the compiled files
say (TRL's own parser reads sft.yaml; its quantization config is built from it), where the
launcher cannot run them (an 8-bit base on CPU) and where torchtune refuses them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ftspec.compiler.dispatch import check_job
from ftspec.targets import get_target
from helpers.jobs import make_job
from helpers.trl_parse import trl_reads

ACCEL = {"launcher": "accelerate", "deploy": {"target": "local"}}
INT8 = {"method": {"kind": "qlora", "quantization": {"bits": 8, "quant_type": "int8"}}}


def _files(**change: Any) -> dict[str, str]:
    job = make_job(**{**ACCEL, **change})
    return {a.path: a.content for a in get_target("accelerate").compile(job)}


def test_an_8bit_base_compiles_to_bitsandbytes_int8() -> None:
    from trl.trainer.utils import get_quantization_config

    files = _files(**INT8)
    model = trl_reads(files["sft.yaml"])[2]
    assert model.load_in_8bit and not model.load_in_4bit and model.use_peft
    config = get_quantization_config(model)
    assert config is not None and config.load_in_8bit and not config.load_in_4bit


def test_an_8bit_base_is_refused_on_cpu_at_the_field() -> None:
    job = make_job(allow_errors=True, **{**ACCEL, **INT8, "resources": {
        "gpus_per_node": 0, "accelerator": None}})
    found = [(".".join(map(str, d.path)), d.code) for d in check_job(job, "accelerate")
             if d.is_error]
    assert ("method.quantization.bits", "target.accelerate.int8-cpu") in found


def test_loraplus_and_freezing_reach_prepare_json() -> None:
    files = _files(method={"lora": {"loraplus_lr_ratio": 16, "loraplus_lr_embedding": 1e-5},
                           "unfrozen_parameters": [r"^base_model\.model\.lm_head"]})
    assert "-m ftspec.runtime.hf_sft" in files["command.sh"]
    assert json.loads(files["prepare.json"])["trainable"] == {
        "loraplus_lr_ratio": 16.0, "loraplus_lr_embedding": 1e-5,
        "unfrozen_parameters": [r"^base_model\.model\.lm_head"]}


def test_plain_lora_keeps_trl_cli() -> None:
    files = _files()
    assert "prepare.json" not in files or "trainable" not in json.loads(files["prepare.json"])


@pytest.mark.parametrize("target", ["torchtune", "kubeflow"])
@pytest.mark.parametrize(("change", "path"), [
    ({"method": {"lora": {"loraplus_lr_ratio": 16}}}, "method.lora.loraplus_lr_ratio"),
    ({"method": {"unfrozen_parameters": ["^model"]}}, "method.unfrozen_parameters"),
    (INT8, "method.quantization.bits"),
])
def test_torchtune_refuses_at_the_field(target: str, change: dict[str, Any], path: str) -> None:
    job = make_job(allow_errors=True, **change)
    found = [".".join(map(str, d.path)) for d in check_job(job, target) if d.is_error]
    assert path in found, found


def test_a_concatenation_reaches_prepare_json_and_reads_every_row() -> None:
    from ftspec.runtime.hf_sft.mixing import interleave

    files = _files(data={"train": None, "mixture": {"strategy": "concatenate", "datasets": [
        {"uri": "hf://org/a"}, {"uri": "hf://org/b"}]}})
    prepare = json.loads(files["prepare.json"])
    assert prepare["mixture_strategy"] == "concatenate"
    assert [t.get("proportion") for t in prepare["train"]] == [None, None]
    assert interleave([[1, 2, 3], [4]], [], "concatenate", seed=0) == [1, 2, 3, 4]


def test_torchtune_refuses_a_concatenation_at_the_strategy() -> None:
    job = make_job(allow_errors=True, data={"train": None, "mixture": {
        "strategy": "concatenate", "datasets": [{"uri": "hf://org/a"}, {"uri": "hf://org/b"}]}})
    found = [".".join(map(str, d.path)) for d in check_job(job, "torchtune") if d.is_error]
    assert "data.mixture.strategy" in found, found
