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
