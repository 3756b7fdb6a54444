"""The model catalog: architecture numbers agree with published sizes; torchtune's nearest."""

from __future__ import annotations

import pytest
from ftspec.compiler.build import model_facts
from ftspec.compiler.memory_lora import lora_trainable_params
from ftspec.compiler.pipeline import compile_spec
from ftspec.spec.catalog.family import param_count
from ftspec.spec.catalog.models import MODEL_FAMILIES, nearest_torchtune
from ftspec.spec.loader import SourceDoc
from ftspec.spec.validate import spec_from_data


@pytest.mark.parametrize("key", sorted(MODEL_FAMILIES))
def test_numbers_give_the_published_parameter_count(key: str) -> None:
    family = MODEL_FAMILIES[key]
    assert param_count(family) / 1e9 == pytest.approx(family.params_b, rel=0.025)


def test_catalog_covers_the_architectures_in_wide_use() -> None:
    archs = {f.arch for f in MODEL_FAMILIES.values()}
    assert {"llama", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "phi3",
            "mistral", "mixtral", "granite", "granitemoe", "bloom", "gpt2", "gpt_bigcode",
            "starcoder2"} <= archs
    assert len(MODEL_FAMILIES) >= 60


@pytest.mark.parametrize(("key", "nearest"), [
    ("qwen3-8b", "qwen2_5-7b"), ("mixtral-8x7b", "mistral-7b"), ("gemma3-4b", "gemma2-2b"),
    ("smollm2-135m", "llama3_2-1b"), ("phi4-mini", "phi3-mini"),
])
def test_nearest_torchtune_model(key: str, nearest: str) -> None:
    assert nearest_torchtune(MODEL_FAMILIES[key]).key == nearest


def _spec(family: str, launcher: str = "torchtune") -> dict[str, object]:
    return {
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "x"},
        "model": {"uri": f"hf://org/{family}", "family": family},
        "data": {"train": {"uri": "hf://tatsu-lab/alpaca"}},
        "training": {"global_batch_size": 8, "micro_batch_size": 8, "learning_rate": 1e-4},
        "resources": {"gpus_per_node": 1, "accelerator": "nvidia-h100-80gb"},
        "launcher": launcher,
    }


def test_torchtune_error_names_the_nearest_model() -> None:
    """The torchtune target's own check, as ``validate`` runs it (the ``checks`` stage)."""
    result = compile_spec(SourceDoc("spec.yaml", _spec("qwen3-8b")), "checks")
    assert [d.hint for d in result.diagnostics if d.is_error] == [
        ("use launcher: accelerate (it trains any causal LM), or the nearest model torchtune "
        "ships: model.family qwen2_5-7b (Qwen2.5 7B)")]


def test_lora_shapes_follow_the_head_size() -> None:
    """Qwen3 8B: 32 heads x 128 = 4096 query width; Gemma 7B: 16 x 256 = 4096 > hidden 3072."""
    spec = spec_from_data(_spec("gemma-7b", "accelerate"))
    facts = model_facts(spec)
    per_layer = 16 * (3072 + 16 * 256)  # rank 16 q_proj: in hidden, out heads x head_dim
    assert lora_trainable_params(facts, ("q_proj",), 16) == per_layer * 28


def test_moe_experts_get_no_adapters() -> None:
    """transformers 5 fuses Mixtral's experts into 3-D parameters PEFT's LoRA does not reach."""
    facts = model_facts(spec_from_data(_spec("mixtral-8x7b", "accelerate")))
    assert lora_trainable_params(facts, ("up_proj",), 8) == 0
    q_only = lora_trainable_params(facts, ("q_proj",), 8)
    assert q_only == 8 * (4096 + 4096) * 32
    assert lora_trainable_params(facts, ("q_proj", "up_proj"), 8) == q_only


QWEN3_8B_NUMBERS = {"num_layers": 36, "num_heads": 32, "num_kv_heads": 8, "embed_dim": 4096,
                    "intermediate_dim": 12288, "vocab_size": 151936, "max_seq_len": 40960,
                    "head_dim": 128, "layer_cls": "Qwen3DecoderLayer"}


def _custom(launcher: str, **extra: object) -> dict[str, object]:
    data = _spec("qwen3-8b", launcher)
    data["model"] = {"uri": "hf://Qwen/Qwen3-8B", "architecture": {**QWEN3_8B_NUMBERS, **extra}}
    return data


def test_any_model_by_its_numbers_gets_the_catalog_estimate() -> None:
    """The same numbers give the same facts and memory estimate as the catalog entry."""
    from ftspec.compiler.build import build_job

    custom = build_job(spec_from_data(_custom("accelerate")))
    known = build_job(spec_from_data(_spec("qwen3-8b", "accelerate")))
    assert custom.model.params_b == pytest.approx(known.model.params_b, rel=0.01)
    assert custom.memory.total_gib == pytest.approx(known.memory.total_gib, rel=0.01)
    assert custom.model.hf_layer_cls == "Qwen3DecoderLayer"


def test_any_model_without_a_layer_class_leaves_wrapping_to_the_model() -> None:
    from ftspec.compiler.build import build_job
    from ftspec.targets.accelerate_config import fsdp_config

    data = _custom("accelerate", layer_cls=None)
    data["distributed"] = {"strategy": "fsdp"}
    data["resources"] = {"gpus_per_node": 2, "accelerator": "nvidia-h100-80gb"}
    data["training"] = {"global_batch_size": 16, "micro_batch_size": 8, "learning_rate": 1e-4}
    config = fsdp_config(build_job(spec_from_data(data)))
    assert "fsdp_transformer_layer_cls_to_wrap" not in config


def test_torchtune_refuses_custom_numbers_without_a_base_and_names_the_nearest() -> None:
    result = compile_spec(SourceDoc("spec.yaml", _custom("torchtune")), "checks")
    errors = [d for d in result.diagnostics if d.is_error]
    assert [d.code for d in errors] == ["target.torchtune.architecture"]
    assert errors[0].hint is not None and "model.family llama3_1-8b" in errors[0].hint


@pytest.mark.parametrize(("family", "says"), [
    ("llama4-scout-17b-16e", "LoRA adapts only the shared expert's up_proj"),
    ("mixtral-8x7b", "LoRA adapts no up_proj there"),
])
def test_lora_on_moe_mlp_names_says_what_is_reached(family: str, says: str) -> None:
    """Llama 4's gate/up/down reach its shared expert (a gated MLP of linear layers), not
    its fused routed experts; Mixtral's reach nothing."""
    from ftspec.spec.rules.method import lora_targets_reachable

    data = _spec(family, "accelerate")
    data["method"] = {"kind": "lora", "lora": {"target_modules": ["q_proj", "up_proj"]}}
    messages = [d.summary for d in lora_targets_reachable(spec_from_data(data))]
    assert len(messages) == 1 and says in messages[0], messages
