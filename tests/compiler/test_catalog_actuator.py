"""The SFTTrainer actuator's models (``../shared/seeds/sfttrainer-actuator-fms-hf-tuning.md``)
in the catalog: every name it lists resolves, except its four IBM-internal checkpoints
whose config.json is not public."""

from __future__ import annotations

import pytest
from ftspec.spec.catalog.models import (
    FAMILY_ALIASES,
    FAMILY_NAMES_WRITTEN,
    MODEL_FAMILIES,
    resolve_family,
)
from ftspec.spec.validate import spec_from_data

ACTUATOR_MODELS = (
    "granite-3b-1.5", "hf-tiny-model-private/tiny-random-BloomForCausalLM", "llama-7b",
    "granite-13b-v2", "llama-13b", "granite-20b-v2", "granite-7b-base", "granite-8b-japanese",
    "granite-8b-code-base", "granite-34b-code-base", "mistral-7b-v0.1", "llama3-8b",
    "llama3-70b", "mixtral-8x7b-instruct-v0.1", "llama2-70b", "llama3.1-8b", "llama3.1-70b",
    "llama3.1-405b", "granite-3b-code-base-128k", "granite-8b-code-base-128k", "allam-1-13b",
    "granite-3-8b", "granite-3.1-2b", "granite-3.1-8b-instruct", "mistral-123b-v2",
    "granite-3.1-3b-a800m-instruct", "granite-vision-3.2-2b", "smollm2-135m",
    "llava-v1.6-mistral-7b", "granite-4.0-micro", "granite-4.0-h-1b", "granite-4.0-350m",
    "granite-4.0-h-small", "granite-4.0-h-micro", "granite-4.0-h-tiny", "granite-3.3-8b",
)
"""The actuator's ``model_name`` values, as its documentation lists them (36)."""
INTERNAL = {"granite-3b-1.5", "granite-13b-v2", "granite-8b-japanese", "allam-1-13b"}
"""Checkpoints on the actuator's own volumes (its models.yaml): no public config.json."""


def test_the_actuator_models_resolve() -> None:
    assert len(ACTUATOR_MODELS) == 36
    covered = [n for n in ACTUATOR_MODELS if resolve_family(n) in MODEL_FAMILIES]
    assert set(ACTUATOR_MODELS) - set(covered) == INTERNAL
    assert len(covered) == 32


def test_aliases_name_real_families_and_no_key() -> None:
    assert all(key in MODEL_FAMILIES for key in FAMILY_ALIASES.values())
    assert not set(FAMILY_ALIASES) & set(MODEL_FAMILIES)
    assert len(set(FAMILY_NAMES_WRITTEN)) == len(FAMILY_NAMES_WRITTEN)


def test_every_new_entry_names_its_source() -> None:
    for name in ACTUATOR_MODELS:
        key = resolve_family(name)
        if key in MODEL_FAMILIES and key not in (
                "llama3-8b", "llama3-70b", "llama2-70b", "llama3_1-8b", "llama3_1-70b",
                "llama3_1-405b", "mistral-7b", "mixtral-8x7b", "granite-3.1-2b",
                "granite-3.1-8b", "granite-3.1-3b-a800m", "smollm2-135m"):
            assert MODEL_FAMILIES[key].source.startswith("hf:"), key


@pytest.mark.parametrize(("written", "key"), [
    ("ibm-granite/granite-4.0-h-tiny", "granite-4.0-h-tiny"),
    ("granite-4.0-h-tiny", "granite-4.0-h-tiny"),
    ("mistral-123b-v2", "mistral-large-2407"),
    ("llama3.1-8b", "llama3_1-8b"),
    ("hf-tiny-model-private/tiny-random-BloomForCausalLM", "tiny-random-bloom"),
])
def test_a_spec_may_name_a_model_as_users_write_it(written: str, key: str) -> None:
    spec = spec_from_data({
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "m"},
        "model": {"uri": "hf://x/y", "family": written},
        "data": {"train": {"uri": "hf://tatsu-lab/alpaca"}, "max_seq_len": 512},
        "method": {"kind": "lora", "lora": {"rank": 8}},
        "training": {"global_batch_size": 8, "learning_rate": 2e-4},
        "resources": {"gpus_per_node": 1, "accelerator": "nvidia-a100-80gb"},
        "launcher": "accelerate"})
    assert spec.model.family == key
