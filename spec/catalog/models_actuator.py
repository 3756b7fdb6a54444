"""The SFTTrainer actuator's models (fms-hf-tuning; ``../shared/seeds``): Granite code, 3.x and
4.0 (dense, hybrid Mamba-2 and hybrid MoE), Mistral Large 2, LLaMA 1, the tiny random BLOOM
and the two vision-language models. ``source`` names the Hugging Face repo each entry
describes; ``verified.py`` says which were compared with a copy of its config.json, the
others are cross-checked by parameter count only."""

from __future__ import annotations

from ftspec.spec.catalog.blocks import MambaFacts, VisionFacts
from ftspec.spec.catalog.family import ModelFamily
from ftspec.spec.catalog.family import make as _m

_LLAMA = "LlamaDecoderLayer"
_GRANITE = "GraniteDecoderLayer"
_BIGCODE, _HYBRID = "GPTBigCodeBlock", "GraniteMoeHybridDecoderLayer"


def _mamba(heads: int, head_dim: int) -> MambaFacts:
    """Granite 4.0-H's Mamba-2 settings: attention at layers 5, 15, 25 and 35 of 40, state
    128, kernel 4, one group, chunks of 256 (their config.json); heads and head size vary."""
    return MambaFacts((5, 15, 25, 35), 128, 4, 1, heads, head_dim, 256)


ACTUATOR_FAMILIES: tuple[ModelFamily, ...] = (
    # Granite 4.0-H layer_types: 4 attention layers, the rest Mamba-2.
    _m("granite-3b-code-base-128k", "Granite 3B Code Base 128K", 3.48, 32, 2560, 32, 32, 10240,
        49152, 131072, _LLAMA, tied=True, source="hf:ibm-granite/granite-3b-code-base-128k"),
    _m("granite-8b-code-base", "Granite 8B Code Base 4K", 8.05, 36, 4096, 32, 8, 14336, 49152,
        4096, _LLAMA, tied=True, source="hf:ibm-granite/granite-8b-code-base-4k"),
    _m("granite-8b-code-base-128k", "Granite 8B Code Base 128K", 8.05, 36, 4096, 32, 8, 14336,
        49152, 131072, _LLAMA, tied=True, source="hf:ibm-granite/granite-8b-code-base-128k"),
    _m("granite-20b-code-base", "Granite 20B Code Base 8K", 20.07, 52, 6144, 48, 1, 24576, 49152,
        8192, _BIGCODE, arch="gpt_bigcode", tied=True, plain=True,
        source="hf:ibm-granite/granite-20b-code-base-8k"),
    _m("granite-34b-code-base", "Granite 34B Code Base 8K", 33.7, 88, 6144, 48, 1, 24576, 49152,
        8192, _BIGCODE, arch="gpt_bigcode", tied=True, plain=True,
        source="hf:ibm-granite/granite-34b-code-base-8k"),
    _m("granite-7b-base", "Granite 7B Base", 6.74, 32, 4096, 32, 32, 11008, 32008, 4096, _LLAMA,
        source="hf:ibm-granite/granite-7b-base"),
    _m("granite-3.0-8b", "Granite 3.0 8B", 8.17, 40, 4096, 32, 8, 12800, 49155, 4096, _GRANITE,
        arch="granite", tied=True, source="hf:ibm-granite/granite-3.0-8b-base"),
    _m("granite-3.3-8b", "Granite 3.3 8B", 8.17, 40, 4096, 32, 8, 12800, 49159, 131072,
        _GRANITE, arch="granite", tied=True, source="hf:ibm-granite/granite-3.3-8b-base"),
    _m("granite-4.0-350m", "Granite 4.0 350M", 0.35, 28, 1024, 16, 4, 2048, 100352, 32768,
        _HYBRID, arch="granitemoehybrid", tied=True, source="hf:ibm-granite/granite-4.0-350m"),
    _m("granite-4.0-micro", "Granite 4.0 Micro (3B)", 3.4, 40, 2560, 40, 8, 8192, 100352, 131072,
        _HYBRID, arch="granitemoehybrid", tied=True, source="hf:ibm-granite/granite-4.0-micro"),
    _m("granite-4.0-h-1b", "Granite 4.0-H 1B (hybrid)", 1.46, 40, 1536, 12, 4, 4096, 100352,
        131072, _HYBRID, arch="granitemoehybrid", tied=True, mamba=_mamba(48, 64),
        source="hf:ibm-granite/granite-4.0-h-1b"),
    _m("granite-4.0-h-micro", "Granite 4.0-H Micro (3B hybrid)", 3.19, 40, 2048, 32, 8, 8192,
        100352, 131072, _HYBRID, arch="granitemoehybrid", tied=True, mamba=_mamba(64, 64),
        source="hf:ibm-granite/granite-4.0-h-micro"),
    _m("granite-4.0-h-tiny", "Granite 4.0-H Tiny (7B-A1B hybrid MoE)", 6.94, 40, 1536, 12, 4,
        512, 100352, 131072, _HYBRID, arch="granitemoehybrid", tied=True, experts=(64, 6),
        shared=1024, mamba=_mamba(48, 64), source="hf:ibm-granite/granite-4.0-h-tiny"),
    _m("granite-4.0-h-small", "Granite 4.0-H Small (32B-A9B hybrid MoE)", 32.2, 40, 4096, 32, 8,
        768, 100352, 131072, _HYBRID, arch="granitemoehybrid", tied=True, experts=(72, 10),
        shared=1536, mamba=_mamba(128, 64), source="hf:ibm-granite/granite-4.0-h-small"),
    _m("mistral-large-2407", "Mistral Large 2 (123B)", 122.6, 88, 12288, 96, 8, 28672, 32768,
        131072, "MistralDecoderLayer", arch="mistral", head_dim=128,
        source="hf:mistralai/Mistral-Large-Instruct-2407"),
    _m("llama-7b", "LLaMA 7B", 6.74, 32, 4096, 32, 32, 11008, 32000, 2048, _LLAMA,
        source="hf:huggyllama/llama-7b"),
    _m("llama-13b", "LLaMA 13B", 13.0, 40, 5120, 40, 40, 13824, 32000, 2048, _LLAMA,
        source="hf:huggyllama/llama-13b"),
    _m("tiny-random-bloom", "tiny random BLOOM (test model)", 0.0000964, 5, 32, 4, 4, 128, 1024,
        512, "BloomBlock", arch="bloom", tied=True, plain=True,
        source="hf:hf-tiny-model-private/tiny-random-BloomForCausalLM"),
    _m("granite-vision-3.2-2b", "Granite Vision 3.2 2B", 2.98, 40, 2048, 32, 8, 8192, 49156,
        131072, _GRANITE, arch="llava_next", tied=True,
        vision=VisionFacts(1152, 27, 4304, 16, 14, 384, feature_layers=4, anyres=True),
        source="hf:ibm-granite/granite-vision-3.2-2b"),
    _m("llava-v1.6-mistral-7b", "LLaVA-NeXT 1.6 Mistral 7B", 7.57, 32, 4096, 32, 8, 14336, 32064,
        32768, "MistralDecoderLayer", arch="llava_next",
        vision=VisionFacts(1024, 24, 4096, 16, 14, 336, anyres=True, class_embedding=True),
        source="hf:llava-hf/llava-v1.6-mistral-7b-hf"),
)
