"""``--target torchtune`` on a model torchtune's main branch builds and no release does
(Qwen3, Llama 4): the refusal at model.family says so, and names the version it checked."""

from __future__ import annotations

import pytest
import yaml
from ftspec.compiler.pipeline import compile_spec
from ftspec.spec.loader import parse_yaml
from ftspec.targets.torchtune_defaults import TORCHTUNE_VERSION
from helpers.jobs import spec_data


def _family_error(family: str) -> str:
    doc = parse_yaml(yaml.safe_dump(spec_data(model={"family": family})), "spec.yaml")
    compiled = compile_spec(doc, "checks")
    [error] = [d for d in compiled.errors if d.code == "target.torchtune.family"]
    return error.summary


@pytest.mark.parametrize(("family", "display"), [("qwen3-8b", "Qwen3 8B"),
                                                 ("qwen3-30b-a3b", "Qwen3 30B-A3B (MoE)")])
def test_qwen3_refusal_says_no_release_builds_it(family: str, display: str) -> None:
    assert _family_error(family) == (
        f"torchtune {TORCHTUNE_VERSION} ships no config for {display} (torchtune's main "
        "branch builds Qwen3, but no torchtune release on PyPI does yet)")


def test_a_model_torchtune_never_built_gets_no_such_clause() -> None:
    assert _family_error("smollm-135m") == \
        f"torchtune {TORCHTUNE_VERSION} ships no config for SmolLM 135M"
