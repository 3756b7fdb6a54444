"""Model families: the architecture numbers the memory estimate needs, and launcher names.

Numbers are the public ``config.json`` facts of each base model (layers, hidden size,
attention heads, key/value heads, head size where it is not hidden/heads, MLP size — per
expert for mixtures of experts —, vocabulary, tied input/output embeddings, experts).
``params_b`` is the published parameter count; a test recomputes it from the numbers
(``param_count``) so a typo in either shows; ``verified.py`` names the entries also compared
with a copy of the model's own ``config.json``. ``torchtune`` names the config folder and size
prefix of torchtune's shipped recipe configs (``llama3_2`` + ``1B`` ->
``llama3_2/1B_lora_single_device``); ``None``: torchtune ships none, the torchtune launcher
rejects the family and names the nearest one it ships (``nearest_torchtune``).
"""

from __future__ import annotations

import math

from ftspec.spec.catalog.family import ModelFamily
from ftspec.spec.catalog.family import make as _m
from ftspec.spec.catalog.models_actuator import ACTUATOR_FAMILIES
from ftspec.spec.catalog.models_recent import RECENT_FAMILIES
from ftspec.spec.catalog.variants import variant_names

_LLAMA = "LlamaDecoderLayer"
_QWEN2 = "Qwen2DecoderLayer"
_QWEN3 = "Qwen3DecoderLayer"
_GEMMA, _GEMMA2, _GEMMA3 = "GemmaDecoderLayer", "Gemma2DecoderLayer", "Gemma3DecoderLayer"
_PHI3 = "Phi3DecoderLayer"
_GRANITE, _GRANITE_MOE = "GraniteDecoderLayer", "GraniteMoeDecoderLayer"
_SC2 = "Starcoder2DecoderLayer"


_FAMILIES: tuple[ModelFamily, ...] = (
    # Llama 2 / Code Llama
    _m("llama2-7b", "Llama 2 7B", 6.74, 32, 4096, 32, 32, 11008, 32000, 4096, _LLAMA,
        tt="llama2/7B"),
    _m("llama2-13b", "Llama 2 13B", 13.0, 40, 5120, 40, 40, 13824, 32000, 4096, _LLAMA,
        tt="llama2/13B"),
    _m("llama2-70b", "Llama 2 70B", 69.0, 80, 8192, 64, 8, 28672, 32000, 4096, _LLAMA,
        tt="llama2/70B"),
    _m("code_llama2-7b", "Code Llama 7B", 6.74, 32, 4096, 32, 32, 11008, 32016, 16384, _LLAMA,
        tt="code_llama2/7B"),
    # Llama 3 / 3.1 / 3.2 / 3.3
    _m("llama3-8b", "Llama 3 8B", 8.03, 32, 4096, 32, 8, 14336, 128256, 8192, _LLAMA,
        tt="llama3/8B"),
    _m("llama3-70b", "Llama 3 70B", 70.6, 80, 8192, 64, 8, 28672, 128256, 8192, _LLAMA,
        tt="llama3/70B"),
    _m("llama3_1-8b", "Llama 3.1 8B", 8.03, 32, 4096, 32, 8, 14336, 128256, 131072, _LLAMA,
        tt="llama3_1/8B"),
    _m("llama3_1-70b", "Llama 3.1 70B", 70.6, 80, 8192, 64, 8, 28672, 128256, 131072, _LLAMA,
        tt="llama3_1/70B"),
    _m("llama3_1-405b", "Llama 3.1 405B", 405.9, 126, 16384, 128, 8, 53248, 128256, 131072, _LLAMA,
        tt="llama3_1/405B"),
    _m("llama3_2-1b", "Llama 3.2 1B", 1.24, 16, 2048, 32, 8, 8192, 128256, 131072, _LLAMA,
        tt="llama3_2/1B", tied=True),
    _m("llama3_2-3b", "Llama 3.2 3B", 3.21, 28, 3072, 24, 8, 8192, 128256, 131072, _LLAMA,
        tt="llama3_2/3B", tied=True),
    _m("llama3_3-70b", "Llama 3.3 70B", 70.6, 80, 8192, 64, 8, 28672, 128256, 131072, _LLAMA,
        tt="llama3_3/70B"),
    # Qwen2 / Qwen2.5
    _m("qwen2-0.5b", "Qwen2 0.5B", 0.49, 24, 896, 14, 2, 4864, 151936, 32768, _QWEN2,
        tt="qwen2/0.5B", arch="qwen2", tied=True),
    _m("qwen2-1.5b", "Qwen2 1.5B", 1.54, 28, 1536, 12, 2, 8960, 151936, 32768, _QWEN2,
        tt="qwen2/1.5B", arch="qwen2", tied=True),
    _m("qwen2-7b", "Qwen2 7B", 7.62, 28, 3584, 28, 4, 18944, 152064, 32768, _QWEN2, tt="qwen2/7B",
        arch="qwen2"),
    _m("qwen2_5-0.5b", "Qwen2.5 0.5B", 0.49, 24, 896, 14, 2, 4864, 151936, 32768, _QWEN2,
        tt="qwen2_5/0.5B", arch="qwen2", tied=True),
    _m("qwen2_5-1.5b", "Qwen2.5 1.5B", 1.54, 28, 1536, 12, 2, 8960, 151936, 32768, _QWEN2,
        tt="qwen2_5/1.5B", arch="qwen2", tied=True),
    _m("qwen2_5-3b", "Qwen2.5 3B", 3.09, 36, 2048, 16, 2, 11008, 151936, 32768, _QWEN2,
        tt="qwen2_5/3B", arch="qwen2", tied=True),
    _m("qwen2_5-7b", "Qwen2.5 7B", 7.62, 28, 3584, 28, 4, 18944, 152064, 32768, _QWEN2,
        tt="qwen2_5/7B", arch="qwen2"),
    _m("qwen2_5-14b", "Qwen2.5 14B", 14.7, 48, 5120, 40, 8, 13824, 152064, 32768, _QWEN2,
        tt="qwen2_5/14B", arch="qwen2"),
    _m("qwen2_5-32b", "Qwen2.5 32B", 32.8, 64, 5120, 40, 8, 27648, 152064, 32768, _QWEN2,
        tt="qwen2_5/32B", arch="qwen2"),
    _m("qwen2_5-72b", "Qwen2.5 72B", 72.7, 80, 8192, 64, 8, 29568, 152064, 32768, _QWEN2,
        tt="qwen2_5/72B", arch="qwen2"),
    # Qwen3 (no torchtune configs in 0.6.1)
    _m("qwen3-0.6b", "Qwen3 0.6B", 0.6, 28, 1024, 16, 8, 3072, 151936, 40960, _QWEN3, arch="qwen3",
        head_dim=128, tied=True),
    _m("qwen3-1.7b", "Qwen3 1.7B", 1.7, 28, 2048, 16, 8, 6144, 151936, 40960, _QWEN3, arch="qwen3",
        head_dim=128, tied=True),
    _m("qwen3-4b", "Qwen3 4B", 4.0, 36, 2560, 32, 8, 9728, 151936, 40960, _QWEN3, arch="qwen3",
        head_dim=128, tied=True),
    _m("qwen3-8b", "Qwen3 8B", 8.2, 36, 4096, 32, 8, 12288, 151936, 40960, _QWEN3, arch="qwen3",
        head_dim=128),
    _m("qwen3-14b", "Qwen3 14B", 14.8, 40, 5120, 40, 8, 17408, 151936, 40960, _QWEN3, arch="qwen3",
        head_dim=128),
    _m("qwen3-32b", "Qwen3 32B", 32.8, 64, 5120, 64, 8, 25600, 151936, 40960, _QWEN3, arch="qwen3",
        head_dim=128),
    _m("qwen3-30b-a3b", "Qwen3 30B-A3B (MoE)", 30.5, 48, 2048, 32, 4, 768, 151936, 40960,
        "Qwen3MoeDecoderLayer", arch="qwen3_moe", head_dim=128, experts=(128, 8)),
    _m("qwen3-235b-a22b", "Qwen3 235B-A22B (MoE)", 235.1, 94, 4096, 64, 4, 1536, 151936, 40960,
        "Qwen3MoeDecoderLayer", arch="qwen3_moe", head_dim=128, experts=(128, 8)),
    # Gemma / Gemma 2 / Gemma 3 (text)
    _m("gemma-2b", "Gemma 2B", 2.51, 18, 2048, 8, 1, 16384, 256000, 8192, _GEMMA, tt="gemma/2B",
        arch="gemma", head_dim=256, tied=True),
    _m("gemma-7b", "Gemma 7B", 8.54, 28, 3072, 16, 16, 24576, 256000, 8192, _GEMMA, tt="gemma/7B",
        arch="gemma", head_dim=256, tied=True),
    _m("gemma2-2b", "Gemma 2 2B", 2.61, 26, 2304, 8, 4, 9216, 256000, 8192, _GEMMA2,
        tt="gemma2/2B", arch="gemma2", head_dim=256, tied=True),
    _m("gemma2-9b", "Gemma 2 9B", 9.24, 42, 3584, 16, 8, 14336, 256000, 8192, _GEMMA2,
        tt="gemma2/9B", arch="gemma2", head_dim=256, tied=True),
    _m("gemma2-27b", "Gemma 2 27B", 27.2, 46, 4608, 32, 16, 36864, 256000, 8192, _GEMMA2,
        tt="gemma2/27B", arch="gemma2", head_dim=128, tied=True),
    _m("gemma3-1b", "Gemma 3 1B", 1.0, 26, 1152, 4, 1, 6912, 262144, 32768, _GEMMA3,
        arch="gemma3_text", head_dim=256, tied=True),
    _m("gemma3-4b", "Gemma 3 4B (text)", 3.88, 34, 2560, 8, 4, 10240, 262208, 131072, _GEMMA3,
        arch="gemma3_text", head_dim=256, tied=True),
    _m("gemma3-12b", "Gemma 3 12B (text)", 11.77, 48, 3840, 16, 8, 15360, 262208, 131072, _GEMMA3,
        arch="gemma3_text", head_dim=256, tied=True),
    _m("gemma3-27b", "Gemma 3 27B (text)", 27.0, 62, 5376, 32, 16, 21504, 262208, 131072, _GEMMA3,
        arch="gemma3_text", head_dim=128, tied=True),
    # Phi-3 / Phi-4
    _m("phi3-mini", "Phi-3 mini 4k", 3.82, 32, 3072, 32, 32, 8192, 32064, 4096, _PHI3,
        tt="phi3/mini", arch="phi3"),
    _m("phi3_5-mini", "Phi-3.5 mini", 3.82, 32, 3072, 32, 32, 8192, 32064, 131072, _PHI3,
        arch="phi3"),
    _m("phi4-14b", "Phi-4 14B", 14.66, 40, 5120, 40, 10, 17920, 100352, 16384, _PHI3,
        tt="phi4/14B", arch="phi3"),
    _m("phi4-mini", "Phi-4 mini", 3.84, 32, 3072, 24, 8, 8192, 200064, 131072, _PHI3, arch="phi3",
        tied=True),
    # Mistral / Mixtral
    _m("mistral-7b", "Mistral 7B v0.1", 7.24, 32, 4096, 32, 8, 14336, 32000, 32768,
        "MistralDecoderLayer", tt="mistral/7B", arch="mistral"),
    _m("mistral-7b-v0.3", "Mistral 7B v0.3", 7.25, 32, 4096, 32, 8, 14336, 32768, 32768,
        "MistralDecoderLayer", arch="mistral"),
    _m("mistral-nemo-12b", "Mistral NeMo 12B", 12.2, 40, 5120, 32, 8, 14336, 131072, 131072,
        "MistralDecoderLayer", arch="mistral", head_dim=128),
    _m("mixtral-8x7b", "Mixtral 8x7B", 46.7, 32, 4096, 32, 8, 14336, 32000, 32768,
        "MixtralDecoderLayer", arch="mixtral", experts=(8, 2)),
    _m("mixtral-8x22b", "Mixtral 8x22B", 140.6, 56, 6144, 48, 8, 16384, 32000, 65536,
        "MixtralDecoderLayer", arch="mixtral", experts=(8, 2)),
    # Granite 3.x dense and MoE
    _m("granite-3.1-2b", "Granite 3.1 2B", 2.53, 40, 2048, 32, 8, 8192, 49155, 131072, _GRANITE,
        arch="granite", tied=True),
    _m("granite-3.1-8b", "Granite 3.1 8B", 8.17, 40, 4096, 32, 8, 12800, 49155, 131072, _GRANITE,
        arch="granite", tied=True),
    _m("granite-3.1-1b-a400m", "Granite 3.1 1B-A400M (MoE)", 1.33, 24, 1024, 16, 8, 512, 49155,
        131072, _GRANITE_MOE, arch="granitemoe", tied=True, experts=(32, 8)),
    _m("granite-3.1-3b-a800m", "Granite 3.1 3B-A800M (MoE)", 3.3, 32, 1536, 24, 8, 512, 49155,
        131072, _GRANITE_MOE, arch="granitemoe", tied=True, experts=(40, 8)),
    # SmolLM / SmolLM2 (Llama architecture)
    _m("smollm-135m", "SmolLM 135M", 0.135, 30, 576, 9, 3, 1536, 49152, 2048, _LLAMA, tied=True),
    _m("smollm-360m", "SmolLM 360M", 0.362, 32, 960, 15, 5, 2560, 49152, 2048, _LLAMA, tied=True),
    _m("smollm-1.7b", "SmolLM 1.7B", 1.71, 24, 2048, 32, 32, 8192, 49152, 2048, _LLAMA, tied=True),
    _m("smollm2-135m", "SmolLM2 135M", 0.135, 30, 576, 9, 3, 1536, 49152, 8192, _LLAMA, tied=True),
    _m("smollm2-360m", "SmolLM2 360M", 0.362, 32, 960, 15, 5, 2560, 49152, 8192, _LLAMA,
        tied=True),
    _m("smollm2-1.7b", "SmolLM2 1.7B", 1.71, 24, 2048, 32, 32, 8192, 49152, 8192, _LLAMA,
        tied=True),
    # BLOOM (ALiBi, plain GELU MLP)
    _m("bloom-560m", "BLOOM 560M", 0.559, 24, 1024, 16, 16, 4096, 250880, 2048, "BloomBlock",
        arch="bloom", tied=True, plain=True),
    _m("bloom-1b7", "BLOOM 1.7B", 1.72, 24, 2048, 16, 16, 8192, 250880, 2048, "BloomBlock",
        arch="bloom", tied=True, plain=True),
    _m("bloom-7b1", "BLOOM 7.1B", 7.07, 30, 4096, 32, 32, 16384, 250880, 2048, "BloomBlock",
        arch="bloom", tied=True, plain=True),
    # GPT-2
    _m("gpt2", "GPT-2 124M", 0.124, 12, 768, 12, 12, 3072, 50257, 1024, "GPT2Block", arch="gpt2",
        tied=True, plain=True),
    _m("gpt2-medium", "GPT-2 Medium 355M", 0.355, 24, 1024, 16, 16, 4096, 50257, 1024, "GPT2Block",
        arch="gpt2", tied=True, plain=True),
    _m("gpt2-large", "GPT-2 Large 774M", 0.774, 36, 1280, 20, 20, 5120, 50257, 1024, "GPT2Block",
        arch="gpt2", tied=True, plain=True),
    _m("gpt2-xl", "GPT-2 XL 1.5B", 1.56, 48, 1600, 25, 25, 6400, 50257, 1024, "GPT2Block",
        arch="gpt2", tied=True, plain=True),
    # StarCoder (GPTBigCode, multi-query attention) / StarCoder2
    _m("starcoderbase-1b", "StarCoderBase 1B", 1.14, 24, 2048, 16, 1, 8192, 49152, 8192,
        "GPTBigCodeBlock", arch="gpt_bigcode", tied=True, plain=True),
    _m("starcoder", "StarCoder 15.5B", 15.5, 40, 6144, 48, 1, 24576, 49152, 8192,
        "GPTBigCodeBlock", arch="gpt_bigcode", tied=True, plain=True),
    _m("starcoder2-3b", "StarCoder2 3B", 3.03, 30, 3072, 24, 2, 12288, 49152, 16384, _SC2,
        arch="starcoder2", tied=True, plain=True),
    _m("starcoder2-7b", "StarCoder2 7B", 7.17, 32, 4608, 36, 4, 18432, 49152, 16384, _SC2,
        arch="starcoder2", tied=True, plain=True),
    _m("starcoder2-15b", "StarCoder2 15B", 15.96, 40, 6144, 48, 4, 24576, 49152, 16384, _SC2,
        arch="starcoder2", plain=True),
) + ACTUATOR_FAMILIES + RECENT_FAMILIES

MODEL_FAMILIES: dict[str, ModelFamily] = {m.key: m for m in _FAMILIES}

FAMILY_ALIASES: dict[str, str] = {
    # the SFTTrainer actuator's model names (its models.yaml) -> the catalog's
    "granite-3-8b": "granite-3.0-8b",
    "granite-3.1-8b-instruct": "granite-3.1-8b",
    "granite-3.1-3b-a800m-instruct": "granite-3.1-3b-a800m",
    "granite-20b-v2": "granite-20b-code-base",  # an IBM-internal v2 checkpoint of this shape
    "mistral-123b-v2": "mistral-large-2407",
    "mistral-7b-v0.1": "mistral-7b",
    "mixtral-8x7b-instruct-v0.1": "mixtral-8x7b",
    "llama3.1-8b": "llama3_1-8b",
    "llama3.1-70b": "llama3_1-70b",
    "llama3.1-405b": "llama3_1-405b",
    "llama3.2-1b": "llama3_2-1b",
    "llama3.2-3b": "llama3_2-3b",
    "granite-3.0-1b-a400m-base": "granite-3.1-1b-a400m",
    # Hugging Face repo ids users write
    **{f.source.removeprefix("hf:"): f.key for f in _FAMILIES if f.source.startswith("hf:")},
    "ibm-granite/granite-8b-code-base": "granite-8b-code-base",
    "ibm-granite/granite-20b-code-base": "granite-20b-code-base",
    "ibm-granite/granite-34b-code-base": "granite-34b-code-base",
    "ibm-granite/granite-3.3-8b-instruct": "granite-3.3-8b",
    "ibm-granite/granite-4.0-h-tiny-base": "granite-4.0-h-tiny",
    "ibm-granite/granite-4.0-h-small-base": "granite-4.0-h-small",
    "ibm-granite/granite-4.0-h-micro-base": "granite-4.0-h-micro",
    "ibm-granite/granite-4.0-h-1b-base": "granite-4.0-h-1b",
    "ibm-granite/granite-4.0-micro-base": "granite-4.0-micro",
    "ibm-granite/granite-4.0-350m-base": "granite-4.0-350m",
    "mistralai/Mistral-Large-Instruct-2411": "mistral-large-2407",
    "allenai/Olmo-3.1-32B-Instruct": "olmo3-32b",  # OLMo 3 32B trained further (verified.py)
    "allenai/Olmo-3-7B-Instruct": "olmo3-7b",  # the base's architecture (verified.py)
    "allenai/Olmo-3-7B-Think": "olmo3-7b",
    "mistralai/Mistral-Small-24B-Base-2501": "mistral-small-24b-2501",  # the instruct's shape
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "llama4-scout-17b-16e",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": "llama4-maverick-17b-128e",
}
"""Other names for catalog families: the actuator's short names and the Hugging Face repo
ids of each entry's source; ``model.family`` accepts them and resolves to the key."""

CUSTOM_BASES: dict[str, str] = {
    "llama2": "torchtune.models.llama2",
    "llama3_2": "torchtune.models.llama3_2",
}
"""Architectures a spec may give custom dimensions for (tiny test models)."""

VARIANT_ALIASES: dict[str, str] = variant_names(
    {**{key: key for key in MODEL_FAMILIES}, **FAMILY_ALIASES})
"""Names that differ from a key or alias only by an -instruct / -base ending
(``granite-34b-code-instruct`` -> ``granite-34b-code-base``): accepted with a warning."""

MODEL_FAMILY_NAMES: tuple[str, ...] = tuple(MODEL_FAMILIES)
FAMILY_NAMES_WRITTEN: tuple[str, ...] = MODEL_FAMILY_NAMES + tuple(FAMILY_ALIASES) \
    + tuple(VARIANT_ALIASES)
"""Every name ``model.family`` accepts: the keys, the aliases, then their variants."""


def resolve_family(name: str) -> str:
    """The catalog key for a family name, one of its aliases or their -instruct / -base
    variants (unknown names unchanged)."""
    return FAMILY_ALIASES.get(name) or VARIANT_ALIASES.get(name, name)


LINEAGE: dict[str, str] = {
    "qwen3": "qwen2", "qwen3_moe": "qwen2", "gemma3_text": "gemma2", "mixtral": "mistral",
    "granite": "llama", "granitemoe": "llama", "starcoder2": "llama",
}
"""Architecture types torchtune 0.6.1 ships no builder for -> the one they descend from."""

TORCHTUNE_UNRELEASED: dict[str, str] = {
    "qwen3": "Qwen3", "qwen3_moe": "Qwen3", "llama4": "Llama 4", "llama4_text": "Llama 4"}
"""Architecture types whose builders and recipe configs are on torchtune's main branch
(``torchtune.models.qwen3``, ``torchtune.models.llama4``) but in no release: 0.6.1, the
newest on PyPI, has neither (``docs/runtime.md``)."""


def nearest_torchtune(family: ModelFamily) -> ModelFamily:
    """The family with torchtune configs closest to ``family``: the same architecture type,
    else its ancestor (``LINEAGE``), else any; then the nearest parameter count; then the
    newer release (later in the catalog)."""
    shipped = [(i, f) for i, f in enumerate(MODEL_FAMILIES.values()) if f.torchtune]
    parent = LINEAGE.get(family.arch)

    def rank(item: tuple[int, ModelFamily]) -> tuple[int, float, int]:
        index, f = item
        kinship = 0 if f.arch == family.arch else 1 if f.arch == parent else 2
        return kinship, round(abs(math.log(f.params_b / family.params_b)), 2), -index

    return min(shipped, key=rank)[1]


def torchtune_alternative(family: ModelFamily) -> str:
    """The hint when torchtune ships nothing for ``family`` (or custom numbers)."""
    near = nearest_torchtune(family)
    return (f"use launcher: accelerate (it trains any causal LM), or the nearest model "
            f"torchtune ships: model.family {near.key} ({near.display})")
