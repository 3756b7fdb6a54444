"""axolotl keys in the forms its current examples write: ShareGPT turn keys through
``message_property_mappings`` (or the deprecated ``message_field_*``), ``fsdp_config`` keys
without the deprecated ``fsdp_`` prefix, and ``attn_implementation``."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.compiler.importers.axolotl import import_axolotl

BASE = ("base_model: Qwen/Qwen2.5-0.5B\nlearning_rate: 1.0e-5\ngradient_checkpointing: false\n"
        "datasets:\n  - path: mlabonne/FineTome-100k\n    type: chat_template\n"
        "    field_messages: conversations\n")


@pytest.mark.parametrize(("keys", "fmt"), [
    ("    message_property_mappings:\n      role: from\n      content: value\n", "sharegpt"),
    ("    message_field_role: from\n    message_field_content: value\n", "sharegpt"),
    ("    message_property_mappings:\n      role: role\n      content: content\n", "chat"),
    ("", "chat"),
])
def test_turn_keys_pick_the_spec_style(tmp_path: Path, keys: str, fmt: str) -> None:
    cfg = tmp_path / "a.yml"
    cfg.write_text(BASE + keys)
    imported = import_axolotl(cfg)
    train = imported.data["data"]["train"]
    assert (train["format"], train["conversation_column"]) == (fmt, "conversations")
    assert not [w for w in imported.warnings if w.path[:1] == ("datasets",)]


def test_other_turn_keys_are_warned_at_their_key(tmp_path: Path) -> None:
    cfg = tmp_path / "a.yml"
    cfg.write_text(BASE + "    message_property_mappings:\n      role: speaker\n"
                   "      content: text\n")
    imported = import_axolotl(cfg)
    (w,) = [w for w in imported.warnings if w.path[:1] == ("datasets",)]
    assert w.path == ("datasets", 0, "message_property_mappings")
    assert w.span is not None and w.span.line == 8
    assert imported.data["data"]["train"]["conversation_style"] == "openai"


FSDP = ("fsdp_config:\n  fsdp_version: 2\n  {p}offload_params: true\n"
        "  {p}auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
        "  {p}transformer_layer_cls_to_wrap: Qwen2DecoderLayer\n"
        "  {p}state_dict_type: SHARDED_STATE_DICT\n  {p}reshard_after_forward: false\n"
        "  {p}activation_checkpointing: true\n")


def test_fsdp_keys_read_with_or_without_the_deprecated_prefix(tmp_path: Path) -> None:
    """axolotl's validation strips ``fsdp_`` from fsdp_config keys: both spellings are one
    config (and FSDP's activation checkpointing is the spec's gradient checkpointing)."""
    out = []
    for prefix in ("", "fsdp_"):
        cfg = tmp_path / f"{prefix or 'plain'}.yml"
        cfg.write_text(BASE + FSDP.format(p=prefix))
        imported = import_axolotl(cfg, nproc=2)
        assert not [w for w in imported.warnings if w.path[:1] == ("fsdp_config",)]
        out.append((imported.data["distributed"],
                    imported.data["training"]["gradient_checkpointing"]))
    assert out[0] == out[1]
    fsdp, checkpointing = out[0]
    assert checkpointing is True
    assert fsdp["fsdp"] | {"version": 2} == fsdp["fsdp"]
    assert {k: fsdp["fsdp"][k] for k in ("cpu_offload", "auto_wrap", "transformer_layer_cls",
                                         "state_dict_type", "reshard_after_forward")} == {
        "cpu_offload": True, "auto_wrap": "transformer",
        "transformer_layer_cls": "Qwen2DecoderLayer", "state_dict_type": "sharded",
        "reshard_after_forward": False}


@pytest.mark.parametrize(("impl", "got"), [("flash_attention_2", "flash_attention_2"),
                                           ("sdpa", "sdpa"),
                                           ("kernels-community/vllm-flash-attn3", None)])
def test_attn_implementation(tmp_path: Path, impl: str, got: str | None) -> None:
    cfg = tmp_path / "a.yml"
    cfg.write_text(BASE + f"attn_implementation: {impl}\n")
    imported = import_axolotl(cfg)
    assert imported.data["model"].get("attn_implementation") == got
    warned = [w for w in imported.warnings if w.path == ("attn_implementation",)]
    assert bool(warned) is (got is None)


@pytest.mark.parametrize(("extra", "ratio", "warned"), [
    ("lr_scheduler: cosine\ncosine_min_lr_ratio: 0.1\n", 0.1, False),
    ("lr_scheduler: cosine\ncosine_min_lr_ratio: 0.1\ncosine_constant_lr_ratio: 0.8\n", None,
     True),
    ("lr_scheduler: cosine\ncosine_min_lr_ratio: 0.1\ncosine_constant_lr_ratio: 0\n", 0.1,
     False),
    ("lr_scheduler: linear\ncosine_min_lr_ratio: 0.1\n", None, True),
])
def test_cosine_min_lr_ratio(tmp_path: Path, extra: str, ratio: float | None,
                             warned: bool) -> None:
    """axolotl's cosine with a floor is transformers' cosine_with_min_lr formula: the spec's
    min_lr_ratio; the compiled schedule is transformers' with min_lr_rate."""
    from helpers.trl_parse import compiled_files, trl_reads

    cfg = tmp_path / "a.yml"
    cfg.write_text(BASE + extra)
    imported = import_axolotl(cfg)
    assert imported.data["training"]["scheduler"].get("min_lr_ratio") == ratio
    assert bool([w for w in imported.warnings if w.path == ("cosine_min_lr_ratio",)]) is warned
    if ratio is not None and not warned:
        _, sft, _, _ = trl_reads(compiled_files(imported.text, "a")["sft.yaml"])
        assert (sft.lr_scheduler_type, sft.lr_scheduler_kwargs) == (
            "cosine_with_min_lr", {"min_lr_rate": 0.1})


def test_cosine_floor_at_the_peak_is_constant_after_warmup(tmp_path: Path) -> None:
    cfg = tmp_path / "a.yml"
    cfg.write_text(BASE + "cosine_min_lr_ratio: 1.0\ncosine_constant_lr_ratio: 0\n")
    sched = import_axolotl(cfg).data["training"]["scheduler"]
    assert (sched["name"], sched.get("min_lr_ratio")) == ("constant_with_warmup", None)


def test_top_level_fsdp_version_wins(tmp_path: Path) -> None:
    """axolotl's validation reads the top-level fsdp_version (a version inside fsdp_config
    is moved there)."""
    cfg = tmp_path / "a.yml"
    cfg.write_text(BASE + "fsdp_version: 2\nfsdp_config:\n  offload_params: false\n")
    assert import_axolotl(cfg, nproc=2).data["distributed"]["fsdp"]["version"] == 2


def test_switches_set_off_are_not_warned_as_training_differently(tmp_path: Path) -> None:
    """load_in_8bit: false is axolotl's default: nothing trains differently, so no word (it
    once said the base loads in 8 bits)."""
    cfg = tmp_path / "a.yml"
    cfg.write_text(BASE + "load_in_8bit: false\nload_in_4bit: false\n")
    imported = import_axolotl(cfg)
    assert not [w for w in imported.warnings if w.path[:1] in (("load_in_8bit",),
                                                                ("load_in_4bit",))]
    cfg.write_text(BASE + "load_in_8bit: true\n")
    (w,) = [w for w in import_axolotl(cfg).warnings if w.path == ("load_in_8bit",)]
    assert "without an adapter" in w.summary


FSDP1 = ("fsdp:\n  - full_shard\n  - auto_wrap\nfsdp_config:\n  fsdp_limit_all_gathers: true\n"
         "  fsdp_sharding_strategy: {sharding}\n  fsdp_backward_prefetch: BACKWARD_PRE\n"
         "  fsdp_forward_prefetch: false\n  fsdp_use_orig_params: false\n")


@pytest.mark.parametrize("sharding", ["FULL_SHARD", "SHARD_GRAD_OP"])
def test_fsdp_keys_axolotl_drops_import_as_its_run(tmp_path: Path, sharding: str) -> None:
    """axolotl's FSDPConfig schema has no sharding / prefetch / limit_all_gathers fields:
    the run takes transformers' FSDP1 defaults (NO_PREFETCH, FULL_SHARD from accelerate),
    and so does the import, warning where the key said otherwise."""
    from transformers import TrainingArguments

    cfg = tmp_path / "fsdp1.yml"
    cfg.write_text(BASE + FSDP1.format(sharding=sharding))
    imported = import_axolotl(cfg, nproc=2)
    fsdp = imported.data["distributed"]["fsdp"]
    assert (fsdp["version"], fsdp["sharding"], fsdp["backward_prefetch"],
            fsdp["forward_prefetch"], fsdp["use_orig_params"], fsdp["state_dict_type"],
            fsdp["cpu_ram_efficient_loading"]) == (1, "full_shard", "none", False, False,
                                                   "full", False)
    warned = {w.path[-1]: w.summary for w in imported.warnings
              if w.path[:1] == ("fsdp_config",)}
    assert "drops it; the run uses transformers' default NO_PREFETCH" in \
        warned["fsdp_backward_prefetch"]
    assert "nothing trains differently" in warned["fsdp_limit_all_gathers"]
    assert "fsdp_forward_prefetch" not in warned
    assert ("fsdp_sharding_strategy" in warned) == (sharding != "FULL_SHARD")
    # transformers' own defaults for what axolotl hands it without those keys
    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, fsdp="full_shard auto_wrap",
                             fsdp_config={"fsdp_version": 1, "use_orig_params": False})
    plugin = args.fsdp_plugin_args
    assert (plugin["backward_prefetch"], plugin["forward_prefetch"], plugin["state_dict_type"],
            plugin["cpu_ram_efficient_loading"], "limit_all_gathers" in plugin) == (
        "NO_PREFETCH", False, "FULL_STATE_DICT", False, False)


def test_leftover_keys_say_what_trains_differently(tmp_path: Path) -> None:
    cfg = tmp_path / "a.yml"
    cfg.write_text(BASE + "    drop_system_message: true\neot_tokens:\n  - <|im_end|>\n"
                   "special_tokens:\n  eos_token: <|im_end|>\n  pad_token: <|endoftext|>\n")
    imported = import_axolotl(cfg)
    warned = {w.path: (w.span.line if w.span else 0, w.summary) for w in imported.warnings}
    line, text = warned[("datasets", 0, "drop_system_message")]
    assert line == 8 and "drops each conversation's leading system message" in text
    line, text = warned[("eot_tokens",)]
    assert line == 9 and "another turn-end token stays untrained" in text
    line, text = warned[("special_tokens", "eos_token")]
    assert line == 12 and "rows end with that token instead" in text
    assert imported.data["model"]["tokenizer"]["pad_token"] == "<|endoftext|>"
    cfg.write_text(BASE.replace("chat_template", "alpaca") + "eot_tokens: [</s>]\n")
    (w,) = [w for w in import_axolotl(cfg).warnings if w.path == ("eot_tokens",)]
    assert "nothing trains differently" in w.summary
