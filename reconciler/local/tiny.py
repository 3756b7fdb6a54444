"""Tiny, locally generated model/tokenizer/dataset so compiled jobs really train on CPU.

`generate_tiny_assets` writes, under `dest`:

    dataset.jsonl                  alpaca-style rows: instruction / input / output
    model/config.json              Hugging Face LlamaForCausalLM config
    model/model.safetensors        random weights, converted with torchtune's `tune_to_hf`
    model/tokenizer.model          llama2: sentencepiece BPE (torchtune and transformers read it)
    model/tokenizer_config.json    llama2: lets `transformers.AutoTokenizer` load the model dir
    model/original/tokenizer.model llama3_2: tiktoken BPE ranks (Meta's layout)
    model/original/special_tokens.json  llama3_2: `added_tokens` in the tokenizer.json shape
    manifest.json                  version, parameters and file digests (written last)

Everything is deterministic in (family, seed, num_examples): the same arguments give
byte-identical files, and a second call with a matching manifest does nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ASSETS_VERSION = 1
FAMILIES = ("llama2", "llama3_2")
VOCAB_SIZE = 320
# torchtune builder kwargs (`model.<key>=` overrides); vocab_size is added per family.
TINY_DIMS: dict[str, int] = {
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "embed_dim": 64,
    "intermediate_dim": 128,
    "max_seq_len": 256,
}
_ROPE_BASE = {"llama2": 10_000.0, "llama3_2": 500_000.0}
# llama3_2: Meta's special tokens, renumbered to sit just above the BPE ranks.
_LLAMA3_SPECIAL_TOKENS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|step_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
    "<|image|>",
    "<|video|>",
)
_LLAMA3_BPE_RANKS = VOCAB_SIZE - 16  # 256 single bytes + 48 merges; specials fill 304..316
_WORDS = (
    "red blue green small big old new cat dog bird fish tree house river stone sun moon "
    "sees likes eats finds moves holds near over under and the a one two three four five"
).split()
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven")


@dataclass(frozen=True)
class TinyAssets:
    """Paths of the generated assets and the model dimensions they were built with."""

    family: str
    model_dir: Path
    tokenizer_path: Path
    special_tokens_path: Path | None
    dataset_path: Path
    vocab_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    embed_dim: int
    intermediate_dim: int
    max_seq_len: int

    @property
    def dims(self) -> dict[str, int]:
        """torchtune model builder kwargs (each is a `model.<key>=` override)."""
        return {"vocab_size": self.vocab_size, **{k: getattr(self, k) for k in TINY_DIMS}}


def generate_tiny_assets(
    dest: Path, *, family: str = "llama2", seed: int = 0, num_examples: int = 64
) -> TinyAssets:
    """Generate (or reuse) the tiny assets for `family` under `dest` and return their paths."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
    dest = Path(dest)
    assets = _layout(dest, family)
    params = {"version": ASSETS_VERSION, "family": family, "seed": seed,
              "num_examples": num_examples}
    if _manifest_matches(dest, params):
        return assets
    _clear(dest)
    assets.model_dir.mkdir(parents=True)
    rng = random.Random(seed)
    rows = [_example(rng) for _ in range(num_examples)]
    _write_jsonl(assets.dataset_path, rows)
    corpus = _tokenizer_corpus(rng, rows)
    if family == "llama2":
        _write_sentencepiece(corpus, assets.tokenizer_path)
        _write_hf_tokenizer_config(assets.model_dir)
    else:
        assert assets.special_tokens_path is not None
        assets.tokenizer_path.parent.mkdir()
        _write_tiktoken(corpus, assets.tokenizer_path)
        _write_special_tokens(assets.special_tokens_path)
    _write_model(assets, seed)
    _write_json(assets.model_dir / "config.json", _hf_config(assets))
    _write_json(dest / "manifest.json", {**params, "files": _digests(dest)})
    return assets


def _layout(dest: Path, family: str) -> TinyAssets:
    model_dir = dest / "model"
    if family == "llama2":
        tokenizer, special = model_dir / "tokenizer.model", None
    else:
        tokenizer = model_dir / "original" / "tokenizer.model"
        special = model_dir / "original" / "special_tokens.json"
    return TinyAssets(family=family, model_dir=model_dir, tokenizer_path=tokenizer,
                      special_tokens_path=special, dataset_path=dest / "dataset.jsonl",
                      vocab_size=VOCAB_SIZE, **TINY_DIMS)


def _manifest_matches(dest: Path, params: dict[str, Any]) -> bool:
    try:
        manifest = json.loads((dest / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    recorded = manifest.pop("files", None)
    return manifest == params and recorded == _digests(dest)


def _digests(dest: Path) -> dict[str, str]:
    files = sorted(p for p in dest.rglob("*") if p.is_file() and p.name != "manifest.json")
    return {p.relative_to(dest).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files}


def _clear(dest: Path) -> None:
    for name in ("manifest.json", "dataset.jsonl"):
        (dest / name).unlink(missing_ok=True)
    shutil.rmtree(dest / "model", ignore_errors=True)


def _example(rng: random.Random) -> dict[str, str]:
    """One instruct row; the tasks are simple word games a tiny model can start to learn."""
    words = rng.sample(_WORDS, rng.randint(3, 6))
    task = rng.randrange(4)
    if task == 0:
        instruction, output = "Reverse the words.", " ".join(reversed(words))
    elif task == 1:
        instruction, output = "Sort the words.", " ".join(sorted(words))
    elif task == 2:
        instruction, output = "Repeat the first word.", words[0]
    else:
        instruction, output = "Count the words.", _NUMBER_WORDS[len(words)]
    return {"instruction": instruction, "input": " ".join(words), "output": output}


def _tokenizer_corpus(rng: random.Random, rows: list[dict[str, str]]) -> list[str]:
    sentences = [" ".join(rng.choices(_WORDS, k=rng.randint(3, 9))) for _ in range(2000)]
    sentences += [value for row in rows for value in row.values()]
    sentences += ["### Instruction:", "### Input:", "### Response:", "user assistant system"]
    return sentences


def _write_sentencepiece(corpus: list[str], path: Path) -> None:
    import io

    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=model, vocab_size=VOCAB_SIZE,
        model_type="bpe", byte_fallback=True, character_coverage=1.0,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1,
        shuffle_input_sentence=False, normalization_rule_name="identity",
        remove_extra_whitespaces=False, split_digits=True, minloglevel=2,
    )
    path.write_bytes(model.getvalue())


def _write_hf_tokenizer_config(model_dir: Path) -> None:
    _write_json(model_dir / "tokenizer_config.json", {
        "tokenizer_class": "LlamaTokenizer",
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "add_bos_token": True, "add_eos_token": False,
        "model_max_length": TINY_DIMS["max_seq_len"],
    })


def _write_tiktoken(corpus: list[str], path: Path) -> None:
    """A valid tiktoken rank file: the 256 single bytes, then merges learnt from `corpus`."""
    ranks = [bytes([b]) for b in range(256)] + _byte_pair_merges(corpus, _LLAMA3_BPE_RANKS - 256)
    lines = [f"{base64.b64encode(tok).decode()} {rank}\n" for rank, tok in enumerate(ranks)]
    path.write_text("".join(lines))


def _byte_pair_merges(corpus: list[str], count: int) -> list[bytes]:
    """Greedy byte-pair merges over space-prefixed words; ties break on the bytes."""
    words = Counter(f" {w}".encode() for line in corpus for w in line.split())
    split = {word: [bytes([b]) for b in word] for word in words}
    merges: list[bytes] = []
    while len(merges) < count:
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for word, parts in split.items():
            for pair in zip(parts, parts[1:]):
                pairs[pair] += words[word]
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best[0] + best[1])
        split = {word: _merge(parts, best) for word, parts in split.items()}
    return merges


def _merge(parts: list[bytes], pair: tuple[bytes, bytes]) -> list[bytes]:
    out: list[bytes] = []
    i = 0
    while i < len(parts):
        if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
            out.append(parts[i] + parts[i + 1])
            i += 2
        else:
            out.append(parts[i])
            i += 1
    return out


def _write_special_tokens(path: Path) -> None:
    added = [{"id": _LLAMA3_BPE_RANKS + i, "content": token, "special": True}
             for i, token in enumerate(_LLAMA3_SPECIAL_TOKENS)]
    _write_json(path, {"added_tokens": added})


def _write_model(assets: TinyAssets, seed: int) -> None:
    """Build the torchtune model with random weights and save it in Hugging Face layout."""
    import torch
    from safetensors.torch import save_file
    from torchtune.models.convert_weights import tune_to_hf

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = _torchtune_model(assets)
    hf_state = tune_to_hf(model.state_dict(), num_heads=assets.num_heads,
                          num_kv_heads=assets.num_kv_heads, dim=assets.embed_dim)
    tensors = {key: value.detach().contiguous().clone() for key, value in hf_state.items()}
    path = assets.model_dir / "model.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})
    path.chmod(0o644)  # safetensors creates the file owner-only


def _torchtune_model(assets: TinyAssets) -> Any:
    if assets.family == "llama2":
        from torchtune.models.llama2 import llama2

        return llama2(**assets.dims)
    from torchtune.models.llama3_2 import llama3_2

    return llama3_2(**assets.dims, tie_word_embeddings=True)


def _hf_config(assets: TinyAssets) -> dict[str, Any]:
    llama2 = assets.family == "llama2"
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": assets.vocab_size,
        "hidden_size": assets.embed_dim,
        "intermediate_size": assets.intermediate_dim,
        "num_hidden_layers": assets.num_layers,
        "num_attention_heads": assets.num_heads,
        "num_key_value_heads": assets.num_kv_heads,
        "head_dim": assets.embed_dim // assets.num_heads,
        "max_position_embeddings": assets.max_seq_len,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-5,
        "rope_theta": _ROPE_BASE[assets.family],
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": not llama2,
        "torch_dtype": "float32",
        "bos_token_id": 1 if llama2 else _LLAMA3_BPE_RANKS,
        "eos_token_id": 2 if llama2 else _LLAMA3_BPE_RANKS + 1,
    }
    if not llama2:
        # Mirrors torchtune's Llama3ScaledRoPE defaults used by the llama3_2 builder.
        config["rope_scaling"] = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": 8192}
    return config


def _write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
