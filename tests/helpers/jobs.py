"""Jobs for target tests: a valid base spec, changed per test, validated and built."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ftspec.compiler.build import build_job
from ftspec.spec.ir import Job
from ftspec.spec.loader import parse_yaml
from ftspec.spec.validate import validate_doc

BASE: dict[str, Any] = {
    "apiVersion": "ftspec.dev/v1alpha1",
    "kind": "FineTune",
    "metadata": {"name": "tiny-lora", "namespace": "ml", "labels": {"team": "nlp"}},
    "model": {"uri": "hf://meta-llama/Llama-3.2-1B-Instruct", "family": "llama3_2-1b"},
    "data": {"train": {"uri": "hf://tatsu-lab/alpaca", "column_map": {"input": "instruction"}},
             "max_seq_len": 512},
    "method": {"kind": "lora", "lora": {"rank": 8, "alpha": 16,
                                        "target_modules": ["q_proj", "v_proj", "o_proj"]}},
    "training": {"epochs": 1, "global_batch_size": 8, "micro_batch_size": 2,
                 "learning_rate": 2.0e-4},
    "resources": {"nodes": 1, "gpus_per_node": 4, "accelerator": "nvidia-a100-80gb"},
    "launcher": "torchtune",
    "deploy": {"target": "kubeflow"},
    "secrets": {"hf_token": {"secretRef": {"name": "hf-token", "key": "token"}}},
}


def merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """Recursive merge; a ``None`` value deletes the key."""
    out = copy.deepcopy(base)
    for key, value in change.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def spec_data(**change: Any) -> dict[str, Any]:
    return merge(BASE, change)


def make_job(*, allow_errors: bool = False, **change: Any) -> Job:
    """Validate BASE with ``change`` merged in, like a spec file, and build its Job."""
    import yaml

    doc = parse_yaml(yaml.safe_dump(spec_data(**change)), "spec.yaml")
    validated = validate_doc(doc)
    if validated.spec is None:
        raise AssertionError("invalid test spec:\n" + "\n".join(
            d.format() for d in validated.diagnostics.items))
    if not allow_errors:
        assert not validated.diagnostics.has_errors
    return build_job(validated.spec, Path("tiny-lora.yaml"))


def load_example(path: Path) -> Job:
    from ftspec.spec.validate import validate_file

    validated = validate_file(path)
    assert validated.spec is not None, [d.format() for d in validated.diagnostics.items]
    return build_job(validated.spec, path)
