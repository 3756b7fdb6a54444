"""What a launcher or deploy target cannot run is checked in the target alone (one home per
rule), and ``validate`` reports it: each case goes through the one compile path at the
``checks`` stage, the stage ``ftspec validate`` runs."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from ftspec.compiler.pipeline import compile_spec
from ftspec.spec.diagnostics import format_path
from ftspec.spec.loader import parse_yaml
from helpers.jobs import spec_data

ACCEL_KF = {"launcher": "accelerate", "method": {"kind": "lora", "lora": {"rank": 8}},
            "deploy": {"target": "kubeflow", "kubeflow": {"generate_runtime": True},
                       "scheduling": {"image": "ghcr.io/acme/trainer:1"}}}
GPTQ_LOCAL: dict[str, Any] = {
    "launcher": "accelerate", "deploy": {"target": "local"},
    "method": {"kind": "gptq_lora", "quantization": {"bits": 4, "quant_type": "gptq"}}}
CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, str]] = [
    # id, accepted changes, rejected changes, code, key path
    ("torchtune-method", {"launcher": "accelerate", "method": {"kind": "ia3", "lora": None}},
     {"method": {"kind": "ia3", "lora": None}}, "target.torchtune.method", "method.kind"),
    ("torchtune-deepspeed", {"launcher": "accelerate", "distributed": {"strategy": "deepspeed"}},
     {"distributed": {"strategy": "deepspeed"}}, "target.torchtune.deepspeed",
     "distributed.strategy"),
    ("torchtune-family", {"launcher": "accelerate", "model": {"family": "smollm-135m"}},
     {"model": {"family": "smollm-135m"}}, "target.torchtune.family", "model.family"),
    ("kubeflow-lora-nodes", {"resources": {"nodes": 1}},
     {"resources": {"nodes": 2}, "training": {"global_batch_size": 16}},
     "kubeflow.lora-nodes", "resources.nodes"),
    ("kubeflow-accelerate-runtime", ACCEL_KF,
     {**ACCEL_KF, "deploy": {"target": "kubeflow"}}, "kubeflow.runtime-required",
     "deploy.kubeflow"),
    ("kubeflow-deadline-version",
     {"deploy": {"kubeflow": {"active_deadline_seconds": 60}}},
     {"deploy": {"kubeflow": {"active_deadline_seconds": 60, "trainer_version": "v2.1"}}},
     "kubeflow.deadline-version", "deploy.kubeflow.active_deadline_seconds"),
    ("accelerate-lora-output-gptq",  # every method of the LoRA family, gptq_lora too
     {**GPTQ_LOCAL, "method": {**GPTQ_LOCAL["method"], "lora": {"output": False}}},
     {**GPTQ_LOCAL, "method": {**GPTQ_LOCAL["method"], "lora": {"output": True}}},
     "target.accelerate.lora-output", "method.lora.output"),
    ("kuberay-name-length",
     {"metadata": {"name": "a" * 47}, "deploy": {"target": "kuberay"}},
     {"metadata": {"name": "a" * 48}, "deploy": {"target": "kuberay"}},
     "kuberay.name-length", "metadata.name"),
]


def _errors(change: dict[str, Any]) -> list[tuple[str | None, str]]:
    doc = parse_yaml(yaml.safe_dump(spec_data(**change)), "spec.yaml")
    compiled = compile_spec(doc, "checks")
    assert compiled.job is not None, [d.format() for d in compiled.diagnostics]
    return [(d.code, format_path(d.path)) for d in compiled.errors]


@pytest.mark.parametrize(("good", "bad", "code", "path"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_validate_reports_the_targets_check(good: dict[str, Any], bad: dict[str, Any],
                                            code: str, path: str) -> None:
    assert code not in [c for c, _ in _errors(good)]
    assert (code, path) in _errors(bad)


def test_no_spec_rule_repeats_a_target_clause() -> None:
    """The spec layer holds no copy of these clauses: its rules alone pass every case."""
    from ftspec.spec.model import FineTuneSpec
    from ftspec.spec.rules import run_rules

    for _, _, bad, _, _ in CASES:
        spec = FineTuneSpec.model_validate(spec_data(**bad))
        assert not [d for d in run_rules(spec) if d.is_error], bad
