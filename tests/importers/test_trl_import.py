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
    LEGACY_KEYS,
    MODEL_DEFAULTS,
    SCRIPT_DEFAULTS,
    SFT_DEFAULTS,
)
from ftspec.compiler.pipeline import CompileOptions, compile_spec
from ftspec.spec.loader import parse_yaml
from ftspec.targets.accelerate import training_args

CORPUS = Path(__file__).parent / "corpus" / "trl"
CONFIGS = sorted(p.name for p in CORPUS.glob("*.yaml"))
HANDBOOK_DATA = ("dataset_mixer", "dataset_splits", "dataset_configs")
"""alignment-handbook keys TRL's parser does not know (the test reads them itself)."""

trl = pytest.importorskip("trl")


def _flags(args: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    key = ""
    for arg in args:
        if arg.startswith("--"):
            key = arg[2:]
            out[key] = []
        else:
            out[key].append(arg)
    return out


def _trl_reads(path: Path) -> tuple[Any, Any, Any, dict[str, Any]]:
    from ruamel.yaml import YAML
    from transformers import HfArgumentParser

    raw = dict(YAML(typ="safe").load(path.read_text()))
    for old, new in LEGACY_KEYS.items():
        if old in raw and new not in raw:
            raw[new] = raw.pop(old)
    raw["use_cpu"] = True  # the test machine has no GPU; no hyper-parameter depends on it
    raw.pop("tf32", None)  # TrainingArguments rejects it without a GPU (imported as a warning)
    parser = HfArgumentParser((trl.ScriptArguments, trl.SFTConfig, trl.ModelConfig))
    script, sft, model = parser.parse_dict(raw, allow_extra_keys=True)
    return script, sft, model, raw


def test_corpus_is_there() -> None:
    assert len(CONFIGS) >= 5
    sources = (CORPUS / "SOURCES").read_text()
    assert all(name in sources for name in CONFIGS)


@pytest.mark.parametrize("name", CONFIGS)
def test_import_validate_compile_equal(name: str) -> None:
    path = CORPUS / name
    imported = import_trl(path)
    assert not [w for w in imported.warnings if w.is_error]
    compiled = compile_spec(parse_yaml(imported.text, f"{name}.ftspec.yaml"), "artifacts",
                            CompileOptions(target="accelerate"))
    assert compiled.ok, [d.format() for d in compiled.diagnostics if d.is_error]
    assert compiled.job is not None
    got = _flags(training_args(compiled.job))
    script, sft, model, raw = _trl_reads(path)

    assert got["model_name_or_path"] == [model.model_name_or_path]
    mixer = raw.get("dataset_mixer")
    assert got["dataset_name"] == [next(iter(mixer)) if mixer else script.dataset_name]
    splits = raw.get("dataset_splits") or [script.dataset_train_split]
    assert got.get("train_split", ["train"]) == [splits[0]]
    configs = raw.get("dataset_configs") or [script.dataset_config]
    assert got.get("dataset_subset", [None]) == [configs[0]]
    assert ("packing" in got) == sft.packing
    assert float(got["learning_rate"][0]) == sft.learning_rate
    assert int(got["per_device_train_batch_size"][0]) == sft.per_device_train_batch_size
    assert int(got["gradient_accumulation_steps"][0]) == sft.gradient_accumulation_steps
    if sft.max_steps > 0:
        assert int(got["max_steps"][0]) == sft.max_steps
    else:
        assert float(got["num_train_epochs"][0]) == sft.num_train_epochs
    assert got["lr_scheduler_type"] == [str(getattr(sft.lr_scheduler_type, "value",
                                                    sft.lr_scheduler_type))]
    if 0 < sft.warmup_steps < 1:
        assert float(got["warmup_ratio"][0]) == sft.warmup_steps
    else:
        assert int(got.get("warmup_steps", ["0"])[0]) == sft.warmup_steps
        assert "warmup_ratio" not in got
    assert float(got["weight_decay"][0]) == sft.weight_decay
    assert float(got["max_grad_norm"][0]) == sft.max_grad_norm
    assert got["optim"] == [str(getattr(sft.optim, "value", sft.optim))]
    assert int(got["seed"][0]) == sft.seed
    assert int(got["max_seq_length"][0]) == sft.max_length
    assert ("bf16" in got) == bool(sft.bf16)
    assert ("fp16" in got) == bool(sft.fp16)
    assert ("gradient_checkpointing" in got) == sft.gradient_checkpointing
    assert int(got["logging_steps"][0]) == sft.logging_steps
    if model.use_peft:
        assert int(got["lora_r"][0]) == model.lora_r
        assert float(got["lora_alpha"][0]) == model.lora_alpha
        assert float(got["lora_dropout"][0]) == model.lora_dropout
        assert got["target_modules"] == list(model.lora_target_modules)
        assert ("load_in_4bit" in got) == model.load_in_4bit
        if model.load_in_4bit:
            assert got["bnb_4bit_quant_type"] == [model.bnb_4bit_quant_type]
    else:
        assert got["peft_method"] == ["none"]


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
    compiled = compile_spec(parse_yaml(imported.text, f"{name}.ftspec.yaml"), "artifacts",
                            CompileOptions(target="accelerate"))
    assert compiled.ok, [d.format() for d in compiled.diagnostics if d.is_error]
    assert compiled.job is not None
    got = _flags(training_args(compiled.job))
    raw = json.loads(path.read_text())
    (ta,) = HfArgumentParser((TrainingArguments,)).parse_dict(
        {**raw, "use_cpu": True, "output_dir": raw.get("output_dir", "out")},
        allow_extra_keys=True)
    assert got["model_name_or_path"] == [raw["model_name_or_path"]]
    assert got["train_file"] == ["./" + raw["training_data_path"]]
    assert got["dataset_text_field"] == [raw["dataset_text_field"]]
    assert got["response_template"] == [raw["response_template"]]
    assert float(got["learning_rate"][0]) == ta.learning_rate
    assert int(got["per_device_train_batch_size"][0]) == ta.per_device_train_batch_size
    assert int(got["gradient_accumulation_steps"][0]) == ta.gradient_accumulation_steps
    assert float(got["num_train_epochs"][0]) == ta.num_train_epochs
    assert got["lr_scheduler_type"] == [ta.lr_scheduler_type.value]
    assert int(got["warmup_steps"][0]) == ta.warmup_steps
    assert float(got["weight_decay"][0]) == ta.weight_decay
    assert float(got["max_grad_norm"][0]) == ta.max_grad_norm
    assert got["optim"] == [ta.optim.value]
    assert int(got["seed"][0]) == ta.seed
    assert int(got["logging_steps"][0]) == ta.logging_steps
    assert int(got["max_seq_length"][0]) == raw.get("max_seq_length", 4096)
    assert ("packing" in got) == raw.get("packing", False)
    assert got["peft_method"] == [raw.get("peft_method", "none")]


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
