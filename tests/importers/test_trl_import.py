"""``ftspec import trl``: every corpus config imports, validates and compiles with
``--target accelerate``, and each hyper-parameter of the compiled command line equals the value
TRL itself reads from the source file (TRL's own argument parser over ``SFTConfig``,
``ModelConfig`` and ``ScriptArguments``, so TRL's defaults come from TRL, not from the table
under test). Corpus: ``tests/importers/corpus/trl`` (sources named in its SOURCES file).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.importers.base import NotThisTool
from ftspec.compiler.importers.trl import import_trl
from ftspec.compiler.importers.trl_defaults import (
    MODEL_DEFAULTS,
    SCRIPT_DEFAULTS,
    SFT_DEFAULTS,
)
from helpers.trl_parse import compiled_files, stored_and_computed, trl_reads

CORPUS = Path(__file__).parent / "corpus" / "trl"
CONFIGS = sorted(p.name for p in CORPUS.glob("*.yaml"))
HANDBOOK_DATA = ("dataset_mixer", "dataset_splits", "dataset_configs")
"""alignment-handbook keys TRL's parser does not know (the test reads them itself)."""

trl = pytest.importorskip("trl")


def _compiled(imported_text: str, name: str) -> tuple[str, dict[str, Any]]:
    """The compiled accelerate job's TRL config (sft.yaml) and its data plan (prepare.json)."""
    files = compiled_files(imported_text, name)
    return files["sft.yaml"], files["prepare.json"]


def test_corpus_is_there() -> None:
    assert len(CONFIGS) >= 5
    sources = (CORPUS / "SOURCES").read_text()
    assert all(name in sources for name in CONFIGS)


SFT_FIELDS = ("learning_rate", "per_device_train_batch_size", "gradient_accumulation_steps",
              "num_train_epochs", "max_steps", "lr_scheduler_type", "warmup_steps",
              "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm",
              "optim", "seed", "max_length", "packing",
              "gradient_checkpointing", "logging_steps", "logging_strategy", "eval_strategy",
              "per_device_eval_batch_size", "save_strategy", "save_total_limit")
MODEL_FIELDS = ("model_name_or_path", "use_peft", "lora_r", "lora_alpha", "lora_dropout",
                "lora_target_modules", "load_in_4bit", "load_in_8bit", "bnb_4bit_quant_type",
                "use_bnb_nested_quant", "use_dora")
"""Hyper-parameters compared as TRL reads them from the source and from the compiled config."""


@pytest.mark.parametrize("name", CONFIGS)
def test_import_validate_compile_equal(name: str) -> None:
    path = CORPUS / name
    imported = import_trl(path)
    assert not [w for w in imported.warnings if w.is_error]
    sft_yaml, prepare = _compiled(imported.text, name)
    script, sft, model, raw = trl_reads(path.read_text())
    got_script, got_sft, got_model, _ = trl_reads(sft_yaml)

    diffs = {f: (getattr(sft, f), getattr(got_sft, f)) for f in SFT_FIELDS
             if getattr(sft, f) != getattr(got_sft, f)}
    if sft.save_strategy == "steps":
        diffs |= {"save_steps": (sft.save_steps, got_sft.save_steps)} \
            if sft.save_steps != got_sft.save_steps else {}
    diffs |= {f: (getattr(model, f), getattr(got_model, f)) for f in MODEL_FIELDS
              if getattr(model, f) != getattr(got_model, f)}
    if stored_and_computed(sft, model) != stored_and_computed(got_sft, got_model):
        diffs["precision"] = (stored_and_computed(sft, model), stored_and_computed(got_sft, got_model))
    assert diffs == {}
    mixer = raw.get("dataset_mixer")
    name_ = next(iter(mixer)) if mixer else script.dataset_name
    split = (raw.get("dataset_splits") or [script.dataset_train_split])[0]
    if "train" in prepare:  # rows ftspec prepares before TRL reads them
        (train,) = prepare["train"]
        assert (train["source"], train.get("split", "train")) == ("hf://" + name_, split)
        if train["format"] == "chat":
            assert train["conversation_column"] == "messages"  # the column TRL reads
    else:
        assert (got_script.dataset_name, got_script.dataset_train_split) == (name_, split)


FMS = Path(__file__).parent / "corpus" / "fms"
FMS_CONFIGS = sorted(p.name for p in FMS.glob("*.json"))


@pytest.mark.parametrize("name", FMS_CONFIGS)
def test_fms_json_import_validate_compile_equal(name: str) -> None:
    """fms-hf-tuning's JSON: transformers' own TrainingArguments parser gives the effective
    values; fms's own defaults (max_seq_length 4096) are the one table fact used."""
    import json

    from transformers import HfArgumentParser, TrainingArguments

    path = FMS / name
    assert name in (FMS / "SOURCES").read_text()
    imported = import_trl(path)
    sft_yaml, prepare = _compiled(imported.text, name)
    _, got, got_model, _ = trl_reads(sft_yaml)
    raw = json.loads(path.read_text())
    (ta,) = HfArgumentParser((TrainingArguments,)).parse_dict(
        {**raw, "use_cpu": True, "output_dir": raw.get("output_dir", "out")},
        allow_extra_keys=True)
    assert got_model.model_name_or_path == raw["model_name_or_path"]
    # fms loads the weights in torch_dtype (its default bfloat16) under TrainingArguments' flags
    fms_model = dataclasses.replace(got_model, dtype=raw.get("torch_dtype", "bfloat16"))
    assert stored_and_computed(got, got_model) == stored_and_computed(ta, fms_model)
    (train,) = prepare["train"]
    assert train["source"] == "./" + raw["training_data_path"]
    assert train["text_field"] == raw["dataset_text_field"]
    assert prepare.get("response_template", train.get("response_template")) == \
        raw["response_template"]
    for f in ("learning_rate", "per_device_train_batch_size", "gradient_accumulation_steps",
              "num_train_epochs", "lr_scheduler_type", "warmup_steps", "weight_decay",
              "max_grad_norm", "optim", "seed", "logging_steps"):
        assert getattr(got, f) == getattr(ta, f), f
    assert got.max_length == raw.get("max_seq_length", 4096)
    assert got.packing == raw.get("packing", False)
    assert got_model.use_peft == (raw.get("peft_method") == "lora")


def test_every_unmapped_key_is_a_located_warning() -> None:
    imported = import_trl(CORPUS / "handbook-zephyr-7b-beta-sft-full.yaml")
    warned = {w.path[0] for w in imported.warnings if w.path}
    assert {"hub_model_id", "push_to_hub", "tf32", "preprocessing_num_workers"} <= warned
    tf32 = next(w for w in imported.warnings if w.path == ("tf32",))
    assert tf32.span is not None and tf32.span.line == 42


def test_not_a_trl_config_is_a_located_error(tmp_path: Path) -> None:
    other = tmp_path / "tt.yaml"
    other.write_text("model:\n  _component_: torchtune.models.llama3_2.lora_llama3_2_1b\n")
    with pytest.raises(NotThisTool) as info:
        import_trl(other)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and (diag.span.file, diag.span.line, diag.span.col) == (
        str(other), 1, 1)


def test_defaults_table_is_installed_trl() -> None:
    def defaults(cls: Any) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
        return {k: getattr(v, "value", v) for k, v in out.items()}

    sft, model, script = defaults(trl.SFTConfig), defaults(trl.ModelConfig), \
        defaults(trl.ScriptArguments)
    assert {k: sft[k] for k in SFT_DEFAULTS} == SFT_DEFAULTS
    assert {k: model[k] for k in MODEL_DEFAULTS} == MODEL_DEFAULTS
    assert {k: script[k] for k in SCRIPT_DEFAULTS} == SCRIPT_DEFAULTS
