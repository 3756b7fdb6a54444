"""``method.unfrozen_parameters`` in the memory estimate: the trainable count against the
``requires_grad`` parameters of real (tiny, random) transformers and PEFT models frozen by
the runtime's own ``freeze``, the parameter names against ``named_parameters()``, the totals
against the catalog's ``param_count`` and ``memory_lora``'s adapters, and the LLaMA Pro
import's estimate with and without its patterns.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.compiler.build import _facts_of, _lora_modules, model_facts
from ftspec.compiler.memory import estimate_memory, trainable_params
from ftspec.compiler.memory_frozen import unfrozen_params, unmatched_patterns
from ftspec.compiler.memory_lora import lora_trainable_params
from ftspec.compiler.memory_names import LINEAR_MODULES, hf_parameters, peft_parameters
from ftspec.spec.catalog.family import param_count
from ftspec.spec.catalog.models import MODEL_FAMILIES
from ftspec.spec.ir import ModelFacts
from ftspec.spec.model import FineTuneSpec

TORCH = pytest.mark.slow
"""The tests that build a model with torch, transformers and PEFT (imported by those tests
only: the module loads without them, so the fast loop collects it quickly)."""

ROOT = Path(__file__).resolve().parents[2]
LLAMA_PRO = (ROOT / "tests/importers/corpus/llamafactory"
             / "2026-extras-llama_pro-llama3_freeze_sft.yaml")
ARCH = {"num_layers": 4, "num_heads": 4, "num_kv_heads": 2, "embed_dim": 64,
        "intermediate_dim": 96, "vocab_size": 200, "max_seq_len": 256}


def spec(method: dict[str, Any], tied: bool = False) -> FineTuneSpec:
    return FineTuneSpec.model_validate({
        "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "t"},
        "model": {"uri": "hf://x/tiny", "architecture": {**ARCH, "tied_embeddings": tied}},
        "data": {"train": {"uri": "hf://x/data"}, "max_seq_len": 128},
        "method": method,
        "training": {"global_batch_size": 8, "learning_rate": 1e-4},
        "resources": {"gpus_per_node": 1},
        "launcher": "accelerate",
    })


def tiny_model(arch: str = "llama", tied: bool = False, **extra: Any) -> Any:
    """The transformers model of ``ARCH``'s numbers."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(
        arch, hidden_size=ARCH["embed_dim"], intermediate_size=ARCH["intermediate_dim"],
        num_hidden_layers=ARCH["num_layers"], num_attention_heads=ARCH["num_heads"],
        num_key_value_heads=ARCH["num_kv_heads"], vocab_size=ARCH["vocab_size"],
        head_dim=ARCH["embed_dim"] // ARCH["num_heads"], tie_word_embeddings=tied,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, **extra)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config)


def requires_grad_count(model: Any, patterns: list[str]) -> int:
    """What the job trains: the runtime's ``freeze`` applied, ``requires_grad`` counted."""
    from ftspec.runtime.hf_sft.trainable import freeze

    freeze(model, patterns)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


FULL_PATTERNS = [
    [r".*\.(1|3)\."],  # LLaMA Pro's import: every parameter of layers 1 and 3
    [r"model\.layers\.[02]\.mlp\.", r"lm_head"],
    [r"model\.embed_tokens", r"model\.norm"],
    [r"model\.layers\.\d+\.self_attn\.(q|v)_proj"],
    [r"layers"],  # re.match: at the start of the name only, so nothing
    [r".*layernorm"],
]


@TORCH
@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("patterns", FULL_PATTERNS, ids=str)
def test_full_trainable_equals_requires_grad(patterns: list[str], tied: bool) -> None:
    s = spec({"kind": "full", "unfrozen_parameters": patterns}, tied)
    model = tiny_model(tied=tied)
    if patterns == [r"layers"]:
        with pytest.raises(SystemExit):  # the runtime refuses a spec training nothing
            requires_grad_count(model, patterns)
        assert trainable_params(s, model_facts(s), ()) == 0
        assert unmatched_patterns(s, model_facts(s), ()) == [0]
        return
    names = [n for n, _ in model.named_parameters()]
    unmatched = [i for i, p in enumerate(patterns) if not any(re.match(p, n) for n in names)]
    want = requires_grad_count(model, patterns)
    assert 0 < want < sum(p.numel() for p in model.parameters())
    assert trainable_params(s, model_facts(s), ()) == want
    assert unmatched_patterns(s, model_facts(s), ()) == unmatched  # a tied model has no lm_head


LORA_PATTERNS = [
    [r".*lora_", r"base_model\.model\.model\.layers\.1\."],
    [r".*\.3\.", r"base_model\.model\.lm_head"],  # layer 3's adapters and base, the head
    [r"base_model\.model\.model\.embed_tokens"],  # the embedding alone: adapters frozen too
]


@TORCH
@pytest.mark.parametrize("dora", [False, True])
@pytest.mark.parametrize("patterns", LORA_PATTERNS, ids=str)
def test_lora_trainable_equals_requires_grad(patterns: list[str], dora: bool) -> None:
    """With an adapter the patterns see PEFT's names and decide about the adapters too."""
    method = {"kind": "dora" if dora else "lora", "unfrozen_parameters": patterns,
              "lora": {"rank": 4, "target_modules": ["q_proj", "v_proj", "down_proj"]}}
    s = spec(method)
    peft = pytest.importorskip("peft")
    lora = peft.get_peft_model(tiny_model(), peft.LoraConfig(
        r=4, target_modules=["q_proj", "v_proj", "down_proj"], use_dora=dora))
    want = requires_grad_count(lora, patterns)
    frozen = unfrozen_params(s, model_facts(s), _lora_modules(s))
    assert frozen is not None and frozen.base + frozen.adapters == want
    memory = estimate_memory(s, model_facts(s), _lora_modules(s), strategy="none",
                             world_size=1, procs_per_node=1, micro_batch_size=1)
    assert memory.trainable_params_b * 1e9 == pytest.approx(want, abs=500)  # rounded to 1e-6 B


NAMED_ARCHS = {
    "llama": "LlamaDecoderLayer", "mistral": "MistralDecoderLayer",
    "qwen2": "Qwen2DecoderLayer", "qwen3": "Qwen3DecoderLayer",
    "granite": "GraniteDecoderLayer", "gemma": "GemmaDecoderLayer",
    "gemma2": "Gemma2DecoderLayer", "gemma3_text": "Gemma3DecoderLayer",
}


@TORCH
@pytest.mark.parametrize("arch", sorted(NAMED_ARCHS))
def test_names_and_sizes_are_transformers_own(arch: str) -> None:
    s = spec({"kind": "full"}, tied=arch.startswith("gemma"))
    facts = replace(model_facts(s), hf_layer_cls=NAMED_ARCHS[arch])
    model = tiny_model(arch, tied=arch.startswith("gemma"))
    assert [(p.name, p.numel) for p in hf_parameters(facts) or ()] == \
        [(n, p.numel()) for n, p in model.named_parameters()]


@TORCH
def test_peft_names_are_peft_own() -> None:
    s = spec({"kind": "dora", "lora": {"rank": 4, "target_modules": ["k_proj", "up_proj"]}})
    peft = pytest.importorskip("peft")
    model = peft.get_peft_model(tiny_model(), peft.LoraConfig(
        r=4, target_modules=["k_proj", "up_proj"], use_dora=True))
    got = peft_parameters(model_facts(s), _lora_modules(s), 4, dora=True)
    assert [(p.name, p.numel) for p in got or ()] == \
        [(n, p.numel()) for n, p in model.named_parameters()]


def _named_families() -> list[str]:
    return sorted(k for k, f in MODEL_FAMILIES.items()
                  if hf_parameters(_facts_of(f, None)) is not None)


def test_named_families_cover_the_llama_like_catalog() -> None:
    named = set(_named_families())
    assert {"llama3-8b", "mistral-7b", "qwen2_5-7b", "qwen3-8b", "gemma2-2b"} <= named


@pytest.mark.parametrize("key", _named_families())
def test_agrees_with_param_count(key: str) -> None:
    """The catalog's count leaves out norms and biases; the projections, embedding and head
    listed here add up to it exactly, and every adapted projection to ``memory_lora``'s."""
    family = MODEL_FAMILIES[key]
    facts = _facts_of(family, None)
    params = hf_parameters(facts) or ()
    weights = [p for p in params if p.linear or p.name.endswith(("embed_tokens.weight",
                                                                 "lm_head.weight"))]
    assert sum(p.numel for p in weights) == param_count(family)
    adapters = [p for p in peft_parameters(facts, LINEAR_MODULES, 16) or ()
                if p.linear == "lora"]
    assert sum(p.numel for p in adapters) == lora_trainable_params(facts, LINEAR_MODULES, 16)


def test_other_architectures_keep_the_methods_count() -> None:
    """Names not known here (a mixture of experts): priced as before, with a note."""
    s = spec({"kind": "full", "unfrozen_parameters": [r".*\.1\."]})
    moe: ModelFacts = replace(model_facts(s), num_experts=4)
    assert unfrozen_params(s, moe) is None
    memory = estimate_memory(s, moe, (), strategy="none", world_size=1, procs_per_node=1,
                             micro_batch_size=1)
    assert memory.trainable_params_b == pytest.approx(moe.params_b, abs=1e-6)
    assert any("not counted" in n for n in memory.notes)


def _llama_pro(tmp_path: Path, keep_patterns: bool) -> Any:
    from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec

    data = yaml.safe_load(import_llamafactory_text())
    if not keep_patterns:
        del data["method"]["unfrozen_parameters"]
    path = tmp_path / ("pro.yaml" if keep_patterns else "all.yaml")
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    compiled = compile_spec(SpecInput(path), "identity", CompileOptions())
    assert compiled.job is not None
    return compiled.job


def test_llama_pro_import_prices_its_eight_layers(tmp_path: Path) -> None:
    """LLaMA-Factory's LLaMA Pro config trains 8 of llama3-8b's 32 layers: gradients and
    AdamW state for those only; the weights stay whole."""
    pro, every = _llama_pro(tmp_path, True), _llama_pro(tmp_path, False)
    facts = pro.model
    layer = sum(p.numel for p in hf_parameters(facts) or () if ".layers.0." in p.name)
    assert pro.memory.trainable_params_b * 1e9 == pytest.approx(8 * layer, abs=1)
    share = pro.memory.trainable_params_b / every.memory.trainable_params_b
    assert pro.memory.optimizer_gib == pytest.approx(every.memory.optimizer_gib * share,
                                                     abs=0.02)
    assert pro.memory.gradients_gib < every.memory.gradients_gib / 4
    fp32_weights = facts.params_b * 1e9 * 4 / 2**30
    assert pro.memory.weights_gib >= fp32_weights
    assert pro.memory.total_gib < every.memory.total_gib / 2


def test_a_pattern_matching_nothing_is_warned_at_its_item(tmp_path: Path) -> None:
    from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec

    data = yaml.safe_load(import_llamafactory_text())
    data["method"]["unfrozen_parameters"] = [r"layers\.3\.", r".*\.3\."]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    found = compile_spec(SpecInput(path), "checks", CompileOptions()).diagnostics
    (warned,) = [d for d in found if d.code == "rule.unfrozen-unmatched"]
    assert warned.path == ("method", "unfrozen_parameters", 0)
    assert warned.span is not None


def import_llamafactory_text() -> str:
    from ftspec.compiler.importers.llamafactory import import_llamafactory

    return import_llamafactory(LLAMA_PRO).text


def test_tied_gradient_and_casts_follow_the_patterns() -> None:
    """The tied embedding's gradient exists only when the embedding trains; autocast recasts
    frozen projections under mixed precision only when some are frozen."""
    from ftspec.compiler.memory import frozen_casts, tied_gradient_bytes
    from ftspec.compiler.memory_placement import Placement

    def full(patterns: list[str]) -> FineTuneSpec:
        s = spec({"kind": "full", "unfrozen_parameters": patterns}, tied=True)
        return s.model_copy(update={"model": s.model.model_copy(update={"precision": "mixed"})})

    place = Placement()
    layers, embedding, everything = full([r".*\.1\."]), full([r"model\.embed"]), full([r".*"])
    assert layers.model.precision_mode == "mixed"
    assert tied_gradient_bytes(layers, model_facts(layers), 4.0, place) == 0.0
    assert tied_gradient_bytes(embedding, model_facts(embedding), 4.0, place) > 0.0
    assert frozen_casts(layers, model_facts(layers), place) > 0.0
    assert frozen_casts(everything, model_facts(everything), place) == 0.0
