"""The data contract as compiled: format names, the format's own train_on_input default,
max_seq_len null, and where a launcher refuses a format (with the spec key at fault)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from ftspec.compiler.build import build_job
from ftspec.spec.ir import Job
from ftspec.spec.validate import spec_from_data
from ftspec.targets import get_target
from helpers.jobs import spec_data

ALPACA = {"uri": "hf://tatsu-lab/alpaca", "format": "alpaca"}


def _job(train: dict[str, Any], launcher: str = "torchtune", **data: Any) -> Job:
    spec = spec_data(launcher=launcher, deploy={"target": "local"})
    spec["data"] = {"train": train, "max_seq_len": 512, **data}
    return build_job(spec_from_data(spec))


def _files(job: Job) -> dict[str, str]:
    target = get_target(job.launcher)
    assert not [d for d in target.check(job) if d.is_error]
    return {a.path: a.content for a in target.compile(job)}


def _errors(job: Job) -> list[tuple[str, str]]:
    return [(".".join(map(str, d.path)), d.code) for d in get_target(job.launcher).check(job)
            if d.is_error]


@pytest.mark.parametrize(("given", "expected"), [(None, True), (False, False), (True, True)])
def test_alpaca_is_torchtunes_alpaca_dataset_with_its_default(given: bool | None,
                                                              expected: bool) -> None:
    train = dict(ALPACA, **({} if given is None else {"train_on_input": given}))
    config = yaml.safe_load(_files(_job(train))["config.yaml"])
    assert config["dataset"]["_component_"] == "torchtune.datasets.alpaca_dataset"
    assert config["dataset"]["train_on_input"] is expected


def test_instruct_keeps_the_false_default() -> None:
    train = {"uri": "hf://x/y", "format": "instruct"}
    config = yaml.safe_load(_files(_job(train))["config.yaml"])
    assert config["dataset"]["_component_"] == "torchtune.datasets.instruct_dataset"
    assert config["dataset"]["train_on_input"] is False


def test_sharegpt_is_a_sharegpt_chat_dataset() -> None:
    config = yaml.safe_load(_files(_job({"uri": "hf://x/y", "format": "sharegpt"}))
                            ["config.yaml"])
    assert config["dataset"]["_component_"] == "torchtune.datasets.chat_dataset"
    assert config["dataset"]["conversation_style"] == "sharegpt"


def test_max_seq_len_null_is_no_truncation_on_both_launchers() -> None:
    tt = yaml.safe_load(_files(_job(ALPACA, max_seq_len=None))["config.yaml"])
    assert tt["tokenizer"]["max_seq_len"] is None
    job = _job(ALPACA, "accelerate", max_seq_len=None)
    files = _files(job)
    assert yaml.safe_load(files["sft.yaml"])["max_length"] is None
    tokenizer = json.loads(files["prepare.json"])["torchtune_tokenizer"]
    assert tokenizer["section"]["max_seq_len"] is None
    assert job.tokens_per_step == job.global_batch_size * job.model.context_len


def test_alpaca_on_accelerate_is_tokenized_as_torchtune_does() -> None:
    files = _files(_job(ALPACA, "accelerate"))
    prepare = json.loads(files["prepare.json"])
    assert prepare["torchtune_tokenizer"]["section"]["_component_"] == \
        "torchtune.models.llama3.llama3_tokenizer"
    assert prepare["torchtune_tokenizer"]["model_files"] == {"path": "original/tokenizer.model"}
    assert prepare["train"][0]["train_on_input"] is True  # alpaca's default
    assert yaml.safe_load(files["sft.yaml"])["completion_only_loss"] is True


def test_prompt_completion_is_trls_own_rows() -> None:
    files = _files(_job({"uri": "hf://x/y", "format": "prompt_completion"}, "accelerate"))
    assert "prepare.json" not in files  # `trl sft` reads the rows as they are
    sft = yaml.safe_load(files["sft.yaml"])
    assert sft["dataset_name"] == "x/y" and sft["completion_only_loss"] is True
    assert _errors(_job({"uri": "hf://x/y", "format": "prompt_completion"})) == [
        ("data.train.format", "target.torchtune.dataset-format")]


def test_refusals_point_at_the_format() -> None:
    mix = {"mixture": {"datasets": [dict(ALPACA, proportion=0.5),
                                    {"uri": "hf://a/b", "format": "text", "proportion": 0.5}]}}
    spec = spec_data(launcher="accelerate", deploy={"target": "local"})
    spec["data"] = {**mix, "max_seq_len": 512}
    assert _errors(build_job(spec_from_data(spec))) == [
        ("data.mixture.datasets.1.format", "target.accelerate.token-identity")]
    system = dict(ALPACA, new_system_prompt="Be brief.")
    assert _errors(_job(system, "accelerate")) == [
        ("data.train.new_system_prompt", "target.accelerate.token-identity")]


def test_a_model_torchtune_cannot_tokenize_renders_alpaca_text() -> None:
    """Only the accelerate launcher runs SmolLM: its alpaca rows are the Alpaca prompt as
    text, tokenized by TRL (no torchtune tokenizer to match)."""
    spec = spec_data(launcher="accelerate", deploy={"target": "local"},
                     model={"uri": "hf://HuggingFaceTB/SmolLM-135M", "family": "smollm-135m"})
    spec["data"] = {"train": ALPACA, "max_seq_len": 512}
    job = build_job(spec_from_data(spec))
    assert _errors(job) == []
    prepare = json.loads(_files(job)["prepare.json"])
    assert "torchtune_tokenizer" not in prepare
    assert prepare["train"][0]["format"] == "alpaca"
    assert _errors(_job(ALPACA)) == []  # (torchtune runs the llama one)
