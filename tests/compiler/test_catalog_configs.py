"""Catalog numbers against the models' own ``config.json``: each public copy under
``tests/data/model_configs/<key>/`` is loaded by transformers' ``AutoConfig`` (a local folder:
no weights, no network) and every number the catalog keeps is compared with it; the decoder
layer class is the one transformers' model class names as its unsplittable block
(``_no_split_modules``, what FSDP auto-wrap and ``device_map`` use). Transformers also builds
the whole model from the copy on the meta device (no memory, no weights), and its weight
matrices must add up to the catalog's ``param_count``: that covers what no single number shows
(a gated or plain MLP, tied embeddings, experts, the Mamba-2 mixers)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ftspec.spec.catalog.family import param_count
from ftspec.spec.catalog.models import MODEL_FAMILIES, ModelFamily
from ftspec.spec.catalog.verified import CONFIG_COPIES, TRANSCRIBED, numbers_source

DATA = Path(__file__).resolve().parents[1] / "data" / "model_configs"
NUMBERS = Path(__file__).resolve().parents[1] / "data" / "model_numbers"
STATED_KEYS = frozenset({
    "model_type", "vocab_size", "max_position_embeddings", "hidden_size",
    "num_attention_heads", "head_dim", "num_key_value_heads", "num_hidden_layers",
    "intermediate_size", "tie_word_embeddings"})
"""What a transcribed source must state for the comparison: every config key
``_text_numbers`` reads of a dense model, so no transformers default stands in for one."""


def _load(key: str) -> Any:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(DATA / key), local_files_only=True)


def _text_numbers(c: Any) -> dict[str, object]:
    """The numbers the catalog keeps, as transformers reads them from a text model's config."""
    heads = c.num_attention_heads
    kv = getattr(c, "num_key_value_heads", None)
    if kv is None:
        kv = 1 if getattr(c, "multi_query", False) else heads
    experts = getattr(c, "num_local_experts", 0) or 0
    inner = (experts and getattr(c, "moe_intermediate_size", None)) \
        or getattr(c, "intermediate_size", None) or getattr(c, "n_inner", None) \
        or 4 * c.hidden_size  # per expert for MoE (Qwen3-MoE: moe_intermediate_size)
    shared = getattr(c, "shared_intermediate_size", 0) or 0
    if c.model_type == "granitemoehybrid" and not experts:
        inner, shared = shared, 0  # Granite 4.0 without experts: the "shared" MLP is the MLP
    step, dense = 1, 0
    if c.model_type == "llama4_text":
        shared = c.intermediate_size  # each MoE layer's one shared expert, of the experts' size
        step = c.interleave_moe_layer_step  # MoE on the layers transformers lists, dense between
        assert c.moe_layers == list(range(step - 1, c.num_hidden_layers, step))
        dense = c.intermediate_size_mlp if step > 1 else 0
    return {
        "moe_layer_step": step, "dense_intermediate_size": dense,
        "attn_output_gate": bool(getattr(c, "attn_output_gate", False)),
        "arch": c.model_type, "num_layers": c.num_hidden_layers, "hidden_size": c.hidden_size,
        "num_heads": heads, "num_kv_heads": kv,
        "head_dim": getattr(c, "head_dim", None) or c.hidden_size // heads,
        "intermediate_size": inner, "vocab_size": c.vocab_size,
        "max_seq_len": getattr(c, "max_position_embeddings", None),
        "tied_embeddings": bool(c.tie_word_embeddings),
        "num_experts": experts,
        "experts_per_token": (getattr(c, "num_experts_per_tok", 0) or 0) if experts else 0,
        "shared_intermediate_size": shared,
    }


def _catalog_numbers(f: ModelFamily) -> dict[str, object]:
    return {
        "moe_layer_step": f.moe_layer_step, "dense_intermediate_size": f.dense_intermediate_size,
        "attn_output_gate": f.attn_output_gate,
        "arch": f.arch, "num_layers": f.num_layers, "hidden_size": f.hidden_size,
        "num_heads": f.num_heads, "num_kv_heads": f.num_kv_heads, "head_dim": f.attn_head_dim,
        "intermediate_size": f.intermediate_size, "vocab_size": f.vocab_size,
        "max_seq_len": f.max_seq_len, "tied_embeddings": f.tied_embeddings,
        "num_experts": f.num_experts, "experts_per_token": f.experts_per_token,
        "shared_intermediate_size": f.shared_intermediate_size,
    }


def _mamba_numbers(c: Any) -> dict[str, object]:
    return {
        "attention_layers": tuple(i for i, t in enumerate(c.layer_types) if t == "attention"),
        "state_size": c.mamba_d_state, "conv_kernel": c.mamba_d_conv,
        "n_groups": c.mamba_n_groups, "num_heads": c.mamba_n_heads, "head_dim": c.mamba_d_head,
        "chunk_size": c.mamba_chunk_size,
    }


def _linear_numbers(c: Any) -> dict[str, object] | None:
    """A gated linear-attention hybrid's ``linear_*`` numbers (None: no linear layers)."""
    kinds = getattr(c, "layer_types", None) or []
    if "linear_attention" not in kinds:
        return None
    return {
        "attention_layers": tuple(i for i, t in enumerate(kinds) if t == "full_attention"),
        "key_heads": c.linear_num_key_heads, "value_heads": c.linear_num_value_heads,
        "key_head_dim": c.linear_key_head_dim, "value_head_dim": c.linear_value_head_dim,
        "conv_kernel": c.linear_conv_kernel_dim,
    }


def _vision_numbers(c: Any) -> dict[str, object]:
    v = c.vision_config
    layers = c.vision_feature_layer
    return {
        "hidden_size": v.hidden_size, "num_layers": v.num_hidden_layers,
        "intermediate_size": v.intermediate_size, "num_heads": v.num_attention_heads,
        "patch_size": v.patch_size, "image_size": v.image_size,
        "feature_layers": len(layers) if isinstance(layers, list) else 1,
        "anyres": bool(getattr(c, "image_grid_pinpoints", None)),
        "class_embedding": v.model_type == "clip_vision_model",
    }


def _weight_matrices(c: Any) -> int:
    """Parameters in the weight matrices of the model transformers builds from ``c``: what
    ``param_count`` prices. Left out, as there: norms and biases (1-D, or named ``*bias`` as
    gpt-oss's per-expert biases are) and GPT-2's learned position table ``wpe``."""
    import torch
    import transformers

    auto = transformers.AutoModelForImageTextToText if getattr(c, "vision_config", None) \
        else transformers.AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(c)
    return sum(p.numel() for name, p in model.named_parameters()
               if p.dim() >= 2 and not name.endswith("bias") and ".wpe." not in name)


def _layer_class(c: Any) -> str:
    """The decoder block transformers' causal LM class for this config keeps whole (Qwen3.5's
    text-only class inherits its checkpoint's vision block too, which it never builds)."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    text = getattr(c, "text_config", None) or c
    model_cls = getattr(transformers, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[text.model_type])
    blocks = [b for b in model_cls._no_split_modules if "Vision" not in b]
    assert isinstance(blocks, (list, set)) and len(blocks) == 1, blocks
    return str(next(iter(blocks)))


def _text_only(family: ModelFamily, config: Any) -> bool:
    """A "(text)" entry: the text decoder of a vision-language checkpoint, its tower not
    priced (the Gemma 3 and Llama 4 entries)."""
    return family.vision is None and getattr(config, "text_config", None) is not None


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(CONFIG_COPIES))
def test_catalog_numbers_match_the_models_config_json(key: str) -> None:
    family = MODEL_FAMILIES[key]
    config = _load(key)
    text_only = _text_only(family, config)
    text = config.text_config if family.vision or text_only else config
    assert text_only == family.display.endswith("(text)")
    numbers = _text_numbers(text)
    if family.vision:
        numbers["arch"] = config.model_type
    assert _catalog_numbers(family) == numbers
    assert (_mamba_numbers(config) if family.mamba else None) == (
        vars(family.mamba) if family.mamba else None)
    assert _linear_numbers(text) == (
        vars(family.linear_attention) if family.linear_attention else None)
    assert (_vision_numbers(config) if family.vision else None) == (
        vars(family.vision) if family.vision else None)
    assert family.hf_layer_cls == _layer_class(config)
    assert param_count(family) == _weight_matrices(text if text_only else config)


def test_every_copy_is_named_in_sources_with_its_commit() -> None:
    """SOURCES names each committed copy's repository, path and commit, and nothing else."""
    rows = re.findall(r"^(\S+)\s+(\S+/\S+)\s+(\S+)\s+([0-9a-f]{40})$",
                      (DATA / "SOURCES").read_text(encoding="utf-8"), re.MULTILINE)
    listed = {key: (repo, path, commit) for key, repo, path, commit in rows}
    assert listed == {k: (c.repo, c.path, c.commit) for k, c in CONFIG_COPIES.items()}
    assert {p.parent.name for p in DATA.glob("*/config.json")} == set(CONFIG_COPIES)


def test_each_entry_says_how_its_numbers_are_known() -> None:
    """``ftspec explain --families`` shows it per family (the ``numbers`` column)."""
    from ftspec.compiler.explain import families_data

    assert all(key in MODEL_FAMILIES for key in CONFIG_COPIES)
    shown = {row["family"]: row["numbers"] for row in families_data()}
    assert shown["llama2-70b"] == numbers_source("llama2-70b") == "config.json"
    assert shown["granite-34b-code-base"] == "cross-checked"
    assert shown["olmo3-7b"] == "transcribed"
    assert sorted(k for k, v in shown.items() if v == "config.json") == sorted(CONFIG_COPIES)
    assert sorted(k for k, v in shown.items() if v == "transcribed") == sorted(TRANSCRIBED)
    assert not set(TRANSCRIBED) & set(CONFIG_COPIES)


def test_a_wrong_number_or_layer_class_is_caught() -> None:
    """The comparison is not vacuous: one number, the wrap class or the MLP's kind off and it
    differs."""
    from dataclasses import replace

    family, config = MODEL_FAMILIES["mixtral-8x7b"], _load("mixtral-8x7b")
    assert _catalog_numbers(family) == _text_numbers(config)
    for wrong in (replace(family, vocab_size=32768), replace(family, num_kv_heads=32),
                  replace(family, experts_per_token=1), replace(family, tied_embeddings=True)):
        assert _catalog_numbers(wrong) != _text_numbers(config)
    assert _layer_class(config) != replace(family, hf_layer_cls="MistralDecoderLayer").hf_layer_cls
    assert param_count(family) == _weight_matrices(config)
    assert param_count(replace(family, gated_mlp=False)) != _weight_matrices(config)


@pytest.mark.slow
def test_a_text_entry_is_its_checkpoints_text_decoder() -> None:
    """Llama 4 Scout's entry is the decoder of a vision-language checkpoint: its numbers are
    the text config's, its count the text model's (the tower's 0.87B left out, not hidden);
    a missing shared expert, a second routed expert or Maverick's dense-and-MoE stack differ."""
    from dataclasses import replace

    family, config = MODEL_FAMILIES["llama4-scout-17b-16e"], _load("llama4-scout-17b-16e")
    assert _text_only(family, config) and config.vision_config.num_hidden_layers == 34
    text = _weight_matrices(config.text_config)
    assert param_count(family) == text
    assert _weight_matrices(config) - text == 871_303_040  # the vision tower and projector
    for wrong in (replace(family, shared_intermediate_size=0),
                  replace(family, experts_per_token=2), replace(family, max_seq_len=1048576)):
        assert _catalog_numbers(wrong) != _text_numbers(config.text_config)
    assert param_count(replace(family, shared_intermediate_size=0)) != text
    maverick = config.text_config
    maverick.interleave_moe_layer_step = 2  # half the layers dense, as Maverick's
    maverick.moe_layers = list(range(1, maverick.num_hidden_layers, 2))
    assert _weight_matrices(maverick) != text


@pytest.mark.slow
def test_dense_and_moe_layers_interleaved_are_counted_apart() -> None:
    """Llama 4 Maverick: MoE on every second layer (128 experts of 8192 beside a shared
    expert), dense MLPs of 16384 between; every layer MoE, or the dense layers at the
    experts' size, and the text model's count differs."""
    from dataclasses import replace

    family, config = MODEL_FAMILIES["llama4-maverick-17b-128e"], _load("llama4-maverick-17b-128e")
    text = config.text_config
    built = _weight_matrices(text)
    assert param_count(family) == built
    assert param_count(replace(family, moe_layer_step=1)) != built
    assert param_count(replace(family, dense_intermediate_size=8192)) != built
    assert _catalog_numbers(replace(family, moe_layer_step=1)) != _text_numbers(text)


@pytest.mark.slow
def test_a_linear_attention_hybrid_is_compared_layer_by_layer() -> None:
    """Qwen3.5's entry keeps which layers are full attention, the linear layers' heads and
    widths and the attention output gate: one of them off and the numbers or the count of
    the text model transformers builds differ."""
    from dataclasses import replace

    family, config = MODEL_FAMILIES["qwen3_5-9b"], _load("qwen3_5-9b")
    text = config.text_config
    assert family.linear_attention is not None
    built = _weight_matrices(text)
    assert param_count(family) == built
    assert param_count(replace(family, attn_output_gate=False)) != built
    assert _catalog_numbers(replace(family, attn_output_gate=False)) != _text_numbers(text)
    for wrong in (replace(family.linear_attention, value_heads=16),
                  replace(family.linear_attention, attention_layers=(7, 15, 23, 31))):
        assert vars(wrong) != _linear_numbers(text)
    assert param_count(replace(family, linear_attention=replace(
        family.linear_attention, value_heads=16))) != built


def _stated(key: str) -> dict[str, Any]:
    """The numbers a transcribed source states (``tests/data/model_numbers/<key>.json``)."""
    import json

    data = json.loads((NUMBERS / f"{key}.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _config_from(numbers: dict[str, Any]) -> Any:
    """A transformers config of the model type, built from the stated numbers alone."""
    from transformers import AutoConfig

    fields = dict(numbers)
    return AutoConfig.for_model(fields.pop("model_type"), **fields)


def test_every_transcribed_source_is_cited_and_states_what_is_compared() -> None:
    """Each data file cites the source ``TRANSCRIBED`` names (repository, path, commit,
    model) and states every number the comparison reads; nothing else is in the folder."""
    assert {p.stem for p in NUMBERS.glob("*.json")} == set(TRANSCRIBED)
    for key, cited in TRANSCRIBED.items():
        data = _stated(key)
        assert data["source"] == {"repo": cited.repo, "path": cited.path,
                                  "commit": cited.commit, "model": cited.model}
        assert re.fullmatch(r"[0-9a-f]{40}", cited.commit)
        assert STATED_KEYS <= set(data["numbers"]) and set(data["numbers"]) <= set(
            data["stated_as"])
        assert MODEL_FAMILIES[key].source == f"hf:{cited.model}"
        assert "not a config.json" in cited.kind


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(TRANSCRIBED))
def test_catalog_numbers_match_the_numbers_a_source_states(key: str) -> None:
    """As for a config.json copy: every number, the wrap class, and the weight matrices of the
    model transformers builds from the stated numbers on the meta device."""
    family = MODEL_FAMILIES[key]
    numbers = _stated(key)["numbers"]
    config = _config_from(numbers)
    assert _catalog_numbers(family) == _text_numbers(config)
    assert family.attn_head_dim == numbers["head_dim"]  # and the count is what transformers
    assert family.hf_layer_cls == _layer_class(config)  # builds with it
    assert param_count(family) == _weight_matrices(config)


@pytest.mark.slow
def test_a_transcribed_entry_off_by_one_number_is_caught() -> None:
    """OLMo 3 7B: grouped-query attention (the 32B's 8 KV heads), tied embeddings or the
    32B's MLP width and the comparison or the count differs."""
    from dataclasses import replace

    family = MODEL_FAMILIES["olmo3-7b"]
    config = _config_from(_stated("olmo3-7b")["numbers"])
    built = _weight_matrices(config)
    for wrong in (replace(family, num_kv_heads=8), replace(family, tied_embeddings=True),
                  replace(family, intermediate_size=27648)):
        assert _catalog_numbers(wrong) != _text_numbers(config)
        assert param_count(wrong) != built
    assert config.layer_types.count("sliding_attention") == 24 and config.sliding_window == 4096


@pytest.mark.slow
def test_a_head_size_apart_from_width_over_heads_is_compared() -> None:
    """Mistral Small 3: 32 heads of 128 over a 5120 width (not 160); the weights its index
    totals (47,144,806,400 bf16 bytes) are the stated numbers' matrices and norms (two per
    layer and the final one, of the width); heads of 160 or the 7B's MLP width differ."""
    from dataclasses import replace

    family = MODEL_FAMILIES["mistral-small-24b-2501"]
    config = _config_from(_stated("mistral-small-24b-2501")["numbers"])
    built = _weight_matrices(config)
    assert param_count(family) == built
    assert 2 * (built + (2 * config.num_hidden_layers + 1) * config.hidden_size) == 47_144_806_400
    for wrong in (replace(family, head_dim=None), replace(family, intermediate_size=14336)):
        assert _catalog_numbers(wrong) != _text_numbers(config)
        assert param_count(wrong) != built
