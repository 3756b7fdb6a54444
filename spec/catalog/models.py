"""Model families: architecture facts for the memory estimate and per-launcher names.

Parameter counts and shapes are the published ones for each base model. ``torchtune``
names the config folder and size prefix of torchtune's shipped recipe configs (for
example ``llama3_2`` + ``1B`` -> ``llama3_2/1B_lora_single_device``); ``None`` means
torchtune ships no config for the family, so the torchtune launcher rejects it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelFamily:
    key: str
    display: str
    params_b: float
    """Total parameters, billions."""
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    vocab_size: int
    max_seq_len: int
    hf_layer_cls: str
    """Decoder layer class, for FSDP ``transformer_layer_cls_to_wrap``."""
    torchtune: tuple[str, str] | None = None
    """(config folder, size prefix) of torchtune's shipped configs."""
    torchtune_builder: str | None = None
    """Module holding torchtune's builders for custom (tiny) dimensions."""
    num_experts: int = 0
    """Mixture-of-experts: experts per MoE layer (0 for dense models)."""


MODEL_FAMILIES: dict[str, ModelFamily] = {
    m.key: m
    for m in (
        ModelFamily("llama2-7b", "Llama 2 7B", 6.74, 32, 4096, 32, 32, 11008, 32000, 4096,
                    "LlamaDecoderLayer", ("llama2", "7B"), "torchtune.models.llama2"),
        ModelFamily("llama2-13b", "Llama 2 13B", 13.0, 40, 5120, 40, 40, 13824, 32000, 4096,
                    "LlamaDecoderLayer", ("llama2", "13B"), "torchtune.models.llama2"),
        ModelFamily("llama3_1-8b", "Llama 3.1 8B", 8.03, 32, 4096, 32, 8, 14336, 128256, 131072,
                    "LlamaDecoderLayer", ("llama3_1", "8B"), "torchtune.models.llama3_1"),
        ModelFamily("llama3_1-70b", "Llama 3.1 70B", 70.6, 80, 8192, 64, 8, 28672, 128256, 131072,
                    "LlamaDecoderLayer", ("llama3_1", "70B"), "torchtune.models.llama3_1"),
        ModelFamily("llama3_2-1b", "Llama 3.2 1B", 1.24, 16, 2048, 32, 8, 8192, 128256, 131072,
                    "LlamaDecoderLayer", ("llama3_2", "1B"), "torchtune.models.llama3_2"),
        ModelFamily("llama3_2-3b", "Llama 3.2 3B", 3.21, 28, 3072, 24, 8, 8192, 128256, 131072,
                    "LlamaDecoderLayer", ("llama3_2", "3B"), "torchtune.models.llama3_2"),
        ModelFamily("qwen2_5-0.5b", "Qwen2.5 0.5B", 0.49, 24, 896, 14, 2, 4864, 151936, 32768,
                    "Qwen2DecoderLayer", ("qwen2_5", "0.5B"), "torchtune.models.qwen2_5"),
        ModelFamily("qwen2_5-1.5b", "Qwen2.5 1.5B", 1.54, 28, 1536, 12, 2, 8960, 151936, 32768,
                    "Qwen2DecoderLayer", ("qwen2_5", "1.5B"), "torchtune.models.qwen2_5"),
        ModelFamily("qwen2_5-7b", "Qwen2.5 7B", 7.62, 28, 3584, 28, 4, 18944, 152064, 32768,
                    "Qwen2DecoderLayer", ("qwen2_5", "7B"), "torchtune.models.qwen2_5"),
        ModelFamily("mistral-7b", "Mistral 7B v0.1", 7.24, 32, 4096, 32, 8, 14336, 32000, 32768,
                    "MistralDecoderLayer", ("mistral", "7B"), "torchtune.models.mistral"),
        ModelFamily("mixtral-8x7b", "Mixtral 8x7B", 46.7, 32, 4096, 32, 8, 14336, 32000, 32768,
                    "MixtralDecoderLayer", None, None, num_experts=8),
        ModelFamily("smollm-135m", "SmolLM 135M", 0.135, 30, 576, 9, 3, 1536, 49152, 2048,
                    "LlamaDecoderLayer", None, None),
        ModelFamily("granite-3.1-8b", "Granite 3.1 8B", 8.17, 40, 4096, 32, 8, 12800, 49155, 131072,
                    "GraniteDecoderLayer", None, None),
    )
}

CUSTOM_BASES: dict[str, str] = {
    "llama2": "torchtune.models.llama2",
    "llama3_2": "torchtune.models.llama3_2",
}
"""Architectures a spec may give custom dimensions for (tiny test models)."""

MODEL_FAMILY_NAMES: tuple[str, ...] = tuple(MODEL_FAMILIES)
