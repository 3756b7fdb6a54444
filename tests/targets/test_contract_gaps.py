"""Fields the torchtune launcher (local or on Kubeflow) cannot express are refused or warned
about at the field; merge_adapter is honoured."""

from __future__ import annotations

from typing import Any

import pytest
from ftspec.compiler.dispatch import check_job
from ftspec.spec.diagnostics import Severity
from ftspec.targets import get_target
from helpers.jobs import make_job

CASES: list[tuple[dict[str, Any], str, Severity]] = [
    ({"model": {"revision": "v1.0"}},
     "model.revision", Severity.ERROR),
    ({"training": {"checkpointing": {"strategy": "steps", "steps": 50}}},
     "training.checkpointing.strategy", Severity.ERROR),
    ({"output": {"uri": "pvc://outputs/run", "push_to_hub": "acme/model"}},
     "output.push_to_hub", Severity.ERROR),
    ({"data": {"num_workers": 4}}, "data.num_workers", Severity.WARNING),
    ({"deploy": {"kuberay": {"image": "x"}}}, "deploy.kuberay", Severity.WARNING),
]


@pytest.mark.parametrize("target", ["torchtune", "kubeflow"])
@pytest.mark.parametrize(("change", "path", "severity"), CASES,
                         ids=[c[1] for c in CASES])
def test_dropped_field_is_diagnosed(target: str, change: dict[str, Any], path: str,
                                    severity: Severity) -> None:
    job = make_job(allow_errors=True, **change)
    found = [(".".join(map(str, d.path)), d.severity) for d in check_job(job, target)]
    assert (path, severity) in found, found


def test_merge_adapter_saves_the_merged_model() -> None:
    def saved_adapter_only(**out: Any) -> Any:
        job = make_job(deploy={"target": "local"}, output={"uri": "file:///tmp/out", **out})
        (config,) = [a for a in get_target("torchtune").compile(job) if a.kind == "config"]
        assert config.obj is not None
        return config.obj["save_adapter_weights_only"]

    assert saved_adapter_only() is True
    assert saved_adapter_only(merge_adapter=True) is False


def test_subset_reaches_torchtune_and_the_trainjob() -> None:
    job = make_job(data={"train": {"uri": "hf://openai/gsm8k", "subset": "main"}})
    assert "dataset.name=main" in kft_args(job)
    local = make_job(deploy={"target": "local"},
                     data={"train": {"uri": "hf://openai/gsm8k", "subset": "main"}})
    (config,) = [a for a in get_target("torchtune").compile(local) if a.kind == "config"]
    assert config.obj is not None and config.obj["dataset"]["name"] == "main"


def kft_args(job: Any) -> list[str]:
    from ftspec.targets.kubeflow_torchtune import trainer_args

    return trainer_args(job)


@pytest.mark.parametrize(("fmt", "warned"), [("alpaca", False), ("chat", True)])
def test_special_tokens_warned_only_where_the_hf_tokenizer_reads_the_rows(
        fmt: str, warned: bool) -> None:
    """On the accelerate launcher, alpaca rows of a Llama 3 model are tokenized by
    torchtune's tokenizer, which reads special_tokens_uri; chat rows go through the Hugging
    Face tokenizer, which does not."""
    job = make_job(allow_errors=True, launcher="accelerate",
                   model={"tokenizer": {"special_tokens_uri": "hf://acme/tok/special.json"}},
                   data={"train": {"uri": "hf://tatsu-lab/alpaca", "format": fmt}})
    found = [".".join(map(str, d.path)) for d in check_job(job, "accelerate")
             if d.severity is Severity.WARNING]
    assert ("model.tokenizer.special_tokens_uri" in found) is warned, found


@pytest.mark.parametrize("launcher", ["torchtune", "accelerate"])
@pytest.mark.parametrize(("template", "refused"), [(None, True), ("mistral", True),
                                                    ("llama2", False)])
def test_a_system_prompt_under_the_mistral_layout_is_refused_at_validate(
        launcher: str, template: str | None, refused: bool) -> None:
    """torchtune's MistralChatTemplate raises on a system message at the first row; a
    spec-given system prompt is known before any row is read."""
    job = make_job(allow_errors=True, launcher=launcher, deploy={"target": "local"},
                   model={"uri": "hf://mistralai/Mistral-7B-Instruct-v0.2",
                          "family": "mistral-7b", "chat_template": template},
                   data={"train": {"uri": "hf://tatsu-lab/alpaca", "format": "instruct",
                                   "new_system_prompt": "You are terse."}})
    found = [(".".join(map(str, d.path)), d.code) for d in check_job(job, launcher)
             if d.is_error]
    hit = ("data.train.new_system_prompt", f"target.{launcher}.mistral-system") in found
    assert hit is refused, found
