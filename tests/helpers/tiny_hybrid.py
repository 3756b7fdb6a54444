"""A tiny Granite-4.0-H-shaped model with random weights: transformers'
``GraniteMoeHybridForCausalLM`` with one Mamba-2 layer and one attention layer, each followed
by a mixture of 4 experts (2 routed per token) plus the shared MLP, hidden size 64 — the layer
pattern of ``granite-4.0-h-*`` at toy size. It shares the tiny Llama 2 assets' sentencepiece
tokenizer (vocabulary 320) and alpaca dataset.

Without the ``mamba_ssm`` / ``causal_conv1d`` kernels (CUDA only) transformers runs the
Mamba-2 mixer through its reference PyTorch implementation (``torch_forward``: the chunked
scan in plain torch), which is what trains here on CPU."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ftspec.reconciler.local.tiny import TinyAssets

LAYER_TYPES = ("mamba", "attention")
NUM_EXPERTS = 4
ARCHITECTURE: dict[str, Any] = {
    "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "embed_dim": 64,
    "intermediate_dim": 32, "vocab_size": 320, "max_seq_len": 256,
    "num_experts": NUM_EXPERTS, "layer_cls": "GraniteMoeHybridDecoderLayer",
}
"""The spec's ``model.architecture``: the attention / MoE numbers only (it has no words for
the Mamba-2 mixer: its state, heads and convolution)."""
LORA_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "in_proj", "out_proj"]
"""Attention projections and the Mamba-2 mixer's input / output projections."""


def tiny_hybrid(dest: Path, assets: TinyAssets) -> Path:
    """Write the model (and the assets' tokenizer) to ``dest``; return the folder."""
    import torch
    from transformers import GraniteMoeHybridConfig, GraniteMoeHybridForCausalLM

    a = ARCHITECTURE
    config = GraniteMoeHybridConfig(
        vocab_size=a["vocab_size"], hidden_size=a["embed_dim"],
        num_hidden_layers=a["num_layers"], num_attention_heads=a["num_heads"],
        num_key_value_heads=a["num_kv_heads"], max_position_embeddings=a["max_seq_len"],
        intermediate_size=a["intermediate_dim"], shared_intermediate_size=64,
        num_local_experts=NUM_EXPERTS, num_experts_per_tok=2,
        layer_types=list(LAYER_TYPES), mamba_n_heads=4, mamba_d_head=32, mamba_n_groups=1,
        mamba_d_state=16, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=16,
        position_embedding_type="rope", bos_token_id=1, eos_token_id=2, pad_token_id=0,
        tie_word_embeddings=True)
    torch.manual_seed(0)
    GraniteMoeHybridForCausalLM(config).save_pretrained(dest)
    for f in assets.model_dir.iterdir():
        if f.name.startswith("tokenizer"):
            shutil.copy(f, dest / f.name)
    return dest
