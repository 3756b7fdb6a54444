"""String values on torchtune's ``key=value`` command line come back exactly as written:
each generated override goes through torchtune's own parser (``tune run``'s
``_merge_yaml_and_cli_args``, which splits at ``=`` and hands the dotlist to OmegaConf), and
the resolved config file through ``OmegaConf.load``. Values no command line can carry are
refused at the field on the Kubeflow target (its runtime reads only the command line)."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest
from ftspec.targets import get_target
from ftspec.targets import kubeflow_torchtune as kft
from ftspec.targets.torchtune_configs import format_value
from helpers.jobs import make_job
from helpers.kubelet import kubelet_expand

PROMPTS = ["[INST] be brief [/INST]", "Note: format: JSON", "yes", "on", "Off", "None",
           "null", "~", "${output_dir}", "it's", "line1\nline2", "123", "- x",
           "{a: 1}", "  padded ", "#hash", "x # c", "tab\there", "a\\nb", "0x1F", "1:30",
           "'q'", '"dq"', "%x", "@x", "`x", "!!str x", "??", "ünïcödé"]


def _cli_value(arg: str) -> Any:
    from omegaconf import OmegaConf
    from torchtune.config._utils import _merge_yaml_and_cli_args

    base = Namespace(dataset={"_component_": "x", "new_system_prompt": None},
                     output_dir="/out")
    conf = _merge_yaml_and_cli_args(base, [arg])
    return OmegaConf.to_container(conf, resolve=True)["dataset"]["new_system_prompt"]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_kubeflow_args_carry_the_exact_string(prompt: str) -> None:
    job = make_job(data={"train": {"uri": "hf://tatsu-lab/alpaca",
                                   "new_system_prompt": prompt}})
    assert not [d.format() for d in get_target("kubeflow").check(job) if d.is_error]
    (arg,) = [a for a in kft.trainer_args(job) if a.startswith("dataset.new_system_prompt=")]
    assert _cli_value(kubelet_expand(arg)) == prompt  # kubelet reads $$ as $


@pytest.mark.parametrize("prompt", PROMPTS)
def test_config_file_carries_the_exact_string(prompt: str, tmp_path: Path) -> None:
    from omegaconf import OmegaConf

    job = make_job(deploy={"target": "local"},
                   data={"train": {"uri": "hf://tatsu-lab/alpaca", "new_system_prompt": prompt}})
    (config,) = [a for a in get_target("torchtune").compile(job) if a.kind == "config"]
    path = tmp_path / "config.yaml"
    path.write_text(config.content, encoding="utf-8")
    conf = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    assert conf["dataset"]["new_system_prompt"] == prompt


@pytest.mark.parametrize("prompt", ["a=b", "Answer with key=value pairs", "???"])
def test_values_no_command_line_can_carry_are_refused(prompt: str) -> None:
    job = make_job(data={"train": {"uri": "hf://tatsu-lab/alpaca",
                                   "new_system_prompt": prompt}})
    errors = [d for d in get_target("kubeflow").check(job) if d.is_error]
    assert [(d.code, d.path) for d in errors] == [
        ("kubeflow.cli-value", ("data", "train", "new_system_prompt"))]
    # the local torchtune target runs the resolved config file, where they are fine
    assert not [d for d in get_target("torchtune").check(job) if d.is_error]


def test_flow_collections_quote_separators() -> None:
    assert format_value({"input": "a, b", "output": "[x]"}) == "{input: 'a, b', output: '[x]'}"


NAMES = ["llama3_2/1B_lora", "alpaca", "tatsu-lab/alpaca", "train", "_x", "a.b.c", "Yes",
         "NULL", "True", "y", "n", "N", "off", "OFF", "inf", "nan", "e10", "x1e5", "a-", "a..b",
         "torchtune.models.llama3_2.lora_llama3_2_1b", "/abs/path", "Y", "none", "NaN", "x:y",
         "ONE", "Off1", "q_proj", "bf16", "cuda", "fsdp", "_", "a/b-c.d_e", "/", "//x", "/-x"]


@pytest.mark.parametrize("text", NAMES)
def test_plain_names_are_decided_as_omegaconf_decides(text: str) -> None:
    """The shortcut for names and paths agrees with OmegaConf's own reading."""
    from ftspec.targets import torchtune_configs as tc
    from omegaconf import OmegaConf

    conf = OmegaConf.to_container(OmegaConf.from_dotlist([f"v={text}"]), resolve=False)
    by_omegaconf = isinstance(conf, dict) and conf.get("v") == text
    shortcut = tc._PLAIN_NAME.fullmatch(text) is not None and text.lower() not in tc.YAML11_WORDS
    if shortcut:
        assert by_omegaconf, text
    tc._reads_back_as.cache_clear()
    assert tc._reads_back_as(text) == by_omegaconf, text
