"""A tiny LLaVA-shaped vision-language model with random weights, its processor and an image
dataset, all made locally: a CLIP vision tower (32x32 pixels in 8x8 patches: 16 image tokens
with LLaVA's default feature selection, which drops CLS), LLaVA's two-layer projector and a
2-layer Llama decoder sharing the tiny Llama 2 assets' sentencepiece tokenizer with an
``<image>`` token added (id 320). The dataset: solid-colour PNGs, each row a conversation
asking for the colour and answering it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ftspec.reconciler.local.tiny import TinyAssets

IMAGE_SIZE = 32
PATCH = 8
IMAGE_TOKENS = (IMAGE_SIZE // PATCH) ** 2
"""Image tokens per image in the text: one per patch (CLS dropped)."""
IMAGE_TOKEN_ID = 320
ARCHITECTURE: dict[str, Any] = {
    "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "embed_dim": 64,
    "intermediate_dim": 128, "vocab_size": 321, "max_seq_len": 256,
}
"""The spec's ``model.architecture``: the language model's numbers (it has no words for the
vision tower or the projector)."""
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] | upper }}: "
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>"
    "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT: {% endif %}")
COLOURS = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 40, 220),
           "yellow": (230, 220, 30), "black": (10, 10, 10), "white": (245, 245, 245)}


def tiny_vlm(dest: Path, assets: TinyAssets) -> Path:
    """Write the model and its processor to ``dest``; return the folder."""
    import torch
    from transformers import (
        AutoTokenizer,
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    a = ARCHITECTURE
    text = LlamaConfig(vocab_size=a["vocab_size"], hidden_size=a["embed_dim"],
                       intermediate_size=a["intermediate_dim"],
                       num_hidden_layers=a["num_layers"], num_attention_heads=a["num_heads"],
                       num_key_value_heads=a["num_kv_heads"],
                       max_position_embeddings=a["max_seq_len"], bos_token_id=1,
                       eos_token_id=2, tie_word_embeddings=False)
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=2, image_size=IMAGE_SIZE, patch_size=PATCH,
                              projection_dim=32)
    config = LlavaConfig(vision_config=vision, text_config=text,
                         image_token_index=IMAGE_TOKEN_ID, image_seq_length=IMAGE_TOKENS,
                         vision_feature_select_strategy="default", vision_feature_layer=-1,
                         projector_hidden_act="gelu")
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(dest)
    tokenizer = AutoTokenizer.from_pretrained(assets.model_dir)
    tokenizer.add_tokens(["<image>"], special_tokens=True)
    assert tokenizer.convert_tokens_to_ids("<image>") == IMAGE_TOKEN_ID
    images = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE},
                                crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=PATCH,
                   vision_feature_select_strategy="default", num_additional_image_tokens=1,
                   chat_template=CHAT_TEMPLATE).save_pretrained(dest)
    for f in assets.model_dir.iterdir():  # the sentencepiece model the tokenizer reads
        if f.name == "tokenizer.model" and not (dest / f.name).exists():
            shutil.copy(f, dest / f.name)
    return dest


def colour_dataset(dest: Path, rows: int = 24) -> Path:
    """PNGs under ``dest/images`` and ``dest/train.jsonl``: ``images`` (a path relative to
    the data file's folder) and ``messages`` (user asks, assistant names the colour)."""
    import numpy as np
    from PIL import Image

    folder = dest / "images"
    folder.mkdir(parents=True, exist_ok=True)
    names = sorted(COLOURS)
    for name in names:
        pixels = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8) + np.array(
            COLOURS[name], dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"{name}.png")
    lines = []
    for i in range(rows):
        name = names[i % len(names)]
        lines.append(json.dumps({"images": [f"images/{name}.png"], "messages": [
            {"role": "user", "content": "What colour is this picture?"},
            {"role": "assistant", "content": f"It is {name}."}]}))
    path = dest / "train.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path
