"""A tiny Qwen3-MoE model with random weights (2 layers, 4 experts of 2 routed per token,
hidden size 64), sharing the tiny Llama 2 assets' sentencepiece tokenizer and dataset: what
the expert-parallel runs train on CPU."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ftspec.reconciler.local.tiny import TinyAssets, generate_tiny_assets

NUM_EXPERTS = 4
ARCHITECTURE: dict[str, Any] = {
    "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "embed_dim": 64, "head_dim": 16,
    "intermediate_dim": 32, "vocab_size": 320, "max_seq_len": 256,
    "num_experts": NUM_EXPERTS, "layer_cls": "Qwen3MoeDecoderLayer",
}
"""The spec's ``model.architecture`` for this model (intermediate_dim: per expert)."""


def tiny_moe(dest: Path) -> tuple[Path, TinyAssets]:
    """Write the model to ``dest / "model"``; return its folder and the tiny assets."""
    import torch
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    assets = generate_tiny_assets(dest / "llama2", family="llama2")
    a = ARCHITECTURE
    config = Qwen3MoeConfig(
        vocab_size=a["vocab_size"], hidden_size=a["embed_dim"], head_dim=a["head_dim"],
        num_hidden_layers=a["num_layers"], num_attention_heads=a["num_heads"],
        num_key_value_heads=a["num_kv_heads"], max_position_embeddings=a["max_seq_len"],
        moe_intermediate_size=a["intermediate_dim"], intermediate_size=128,
        num_experts=NUM_EXPERTS, num_experts_per_tok=2, bos_token_id=1, eos_token_id=2,
        tie_word_embeddings=False)
    torch.manual_seed(0)
    model_dir = dest / "model"
    Qwen3MoeForCausalLM(config).save_pretrained(model_dir)
    for f in assets.model_dir.iterdir():
        if f.name.startswith("tokenizer"):
            shutil.copy(f, model_dir / f.name)
    return model_dir, assets
