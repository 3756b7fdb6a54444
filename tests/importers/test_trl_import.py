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
              "per_device_eval_batch_size", "save_strategy", "save_total_limit",
              "assistant_only_loss", "neftune_noise_alpha")
MODEL_FIELDS = ("model_name_or_path", "use_peft", "lora_r", "lora_alpha", "lora_dropout",
                "lora_target_modules", "load_in_4bit", "load_in_8bit", "bnb_4bit_quant_type",
                "use_bnb_nested_quant", "use_dora")
"""Hyper-parameters compared as TRL reads them from the source and from the compiled config."""


NOT_VALIDATED: dict[str, str] = {}
"""Configs whose model is outside ftspec's catalog: the import says what to add
(model.architecture) and validate refuses until it is there."""
MAY_WARN = {"lr_scheduler_type", "save_strategy", "save_steps", "eval_strategy",
            "per_device_eval_batch_size", "mixture", "neftune_noise_alpha"}
"""Fields that may differ with a warning at their source key (a schedule with no spec name,
a save cadence given as a ratio, evaluation on a held-out row count, NEFTune's noise, which
the spec has no field for)."""
KEY_OF = {"save_strategy": "save_steps", "eval_strategy": "dataset_mixture",
          "mixture": "dataset_mixture",
          "per_device_eval_batch_size": "dataset_mixture"}
"""Compared field -> the source key whose warning covers it, where the two differ."""


@dataclasses.dataclass
class Outcome:
    validated: bool = False
    diffs: dict[str, tuple[Any, Any]] = dataclasses.field(default_factory=dict)
    warned: set[str] = dataclasses.field(default_factory=set)


OUTCOMES: dict[str, Outcome] = {}


def _sources(raw: dict[str, Any], script: Any) -> list[tuple[str, str]]:
    """(hub name, split) of each training dataset, as the source names them."""
    if isinstance(raw.get("dataset_mixture"), dict):
        return [(e["id"], e.get("split", "train")) for e in raw["dataset_mixture"]["datasets"]]
    mixer = raw.get("dataset_mixer")
    split = (raw.get("dataset_splits") or [script.dataset_train_split])[0]
    return [(name, split) for name in mixer] if mixer else [(script.dataset_name, split)]


def _outcome(name: str) -> Outcome:
    if name in OUTCOMES:
        return OUTCOMES[name]
    from ftspec.spec.loader import parse_yaml
    from ftspec.spec.validate import validate_doc

    path = CORPUS / name
    imported = import_trl(path)
    assert not [w for w in imported.warnings if w.is_error]
    out = OUTCOMES[name] = Outcome()
    out.validated = validate_doc(parse_yaml(imported.text, name)).ok
    if not out.validated:
        return out
    sft_yaml, prepare = _compiled(imported.text, name)
    script, sft, model, raw = trl_reads(path.read_text())
    got_script, got_sft, got_model, _ = trl_reads(sft_yaml)
    warned_at = {w.path[0] for w in imported.warnings if w.path}
    diffs = {f: (getattr(sft, f), getattr(got_sft, f)) for f in SFT_FIELDS
             if getattr(sft, f) != getattr(got_sft, f)}
    # the schedule's arguments (cosine_with_min_lr's floor); unset is transformers' {}
    kwargs = (sft.lr_scheduler_kwargs or {}, got_sft.lr_scheduler_kwargs or {})
    if kwargs[0] != kwargs[1]:
        diffs["lr_scheduler_kwargs"] = kwargs
    if sft.eval_strategy == "no" == got_sft.eval_strategy:  # the eval batch is never built
        diffs.pop("per_device_eval_batch_size", None)
    if sft.save_strategy == "steps" and sft.save_steps != got_sft.save_steps:
        diffs["save_steps"] = (sft.save_steps, got_sft.save_steps)
    diffs |= {f: (getattr(model, f), getattr(got_model, f)) for f in MODEL_FIELDS
              if getattr(model, f) != getattr(got_model, f)}
    # None: BitsAndBytesConfig's own uint8
    storage = (model.bnb_4bit_quant_storage or "uint8", got_model.bnb_4bit_quant_storage)
    if model.load_in_4bit and storage[0] != storage[1]:
        diffs["bnb_4bit_quant_storage"] = storage
    if stored_and_computed(sft, model) != stored_and_computed(got_sft, got_model):
        diffs["precision"] = (stored_and_computed(sft, model),
                              stored_and_computed(got_sft, got_model))
    # The loss mask of conversational rows: TRL trains every token unless
    # assistant_only_loss; ftspec's prepared chat rows keep the prompt only with train_on_input.
    assistant_only = got_sft.assistant_only_loss
    if "train" in prepare:  # rows ftspec prepares before TRL reads them
        got = [(t["source"], t.get("split", "train")) for t in prepare["train"]]
        for t in prepare["train"]:
            if t["format"] == "chat":
                assert t["conversation_column"] == "messages"  # the column TRL reads
                assistant_only = assistant_only or not t.get("train_on_input", False)
    else:
        got = [("hf://" + got_script.dataset_name, got_script.dataset_train_split)]
    # completion_only_loss None (TRL's default) masks the prompt of prompt-completion rows
    # only; the corpus rows are text or conversations, where None and False train alike.
    if (sft.completion_only_loss is True) != (got_sft.completion_only_loss is True):
        diffs["completion_only_loss"] = (sft.completion_only_loss, got_sft.completion_only_loss)
    if assistant_only != sft.assistant_only_loss:
        diffs["loss_mask"] = (sft.assistant_only_loss, assistant_only)
    want = [("hf://" + n, split) for n, split in _sources(raw, script)]
    if got != want:
        diffs["datasets"] = (want, got)
    # the dataset's configuration (subset): dataset_config, or each mixture entry's config
    want_subsets = [e.get("config") for e in raw["dataset_mixture"]["datasets"]] \
        if isinstance(raw.get("dataset_mixture"), dict) else None
    if want_subsets is None and raw.get("dataset_mixer") is None:
        want_subsets = [script.dataset_config]
    got_subsets = [t.get("subset") for t in prepare["train"]] if "train" in prepare else \
        [got_script.dataset_config]
    if want_subsets is not None and got_subsets != want_subsets:
        diffs["subsets"] = (want_subsets, got_subsets)
    # several datasets: the handbook keeps weight x rows of each and concatenates them
    if len(want) > 1:
        mix = raw.get("dataset_mixture") or {}
        weights = [e.get("weight", 1.0) for e in mix.get("datasets", [])] or \
            list((raw.get("dataset_mixer") or {}).values())
        how = "concatenate" if all(w == 1.0 for w in weights) else "subsample"
        if how != prepare.get("mixture_strategy"):
            diffs["mixture"] = (how, prepare.get("mixture_strategy"))
    out.warned = {f for f in diffs if KEY_OF.get(f, f) in warned_at}
    out.diffs = {f: v for f, v in diffs.items() if f not in out.warned}
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", CONFIGS)
def test_import_validate_compile_equal(name: str) -> None:
    out = _outcome(name)
    if name in NOT_VALIDATED:
        assert not out.validated
        imported = import_trl(CORPUS / name)
        (why,) = [w for w in imported.warnings if w.path == ("model_name_or_path",)]
        assert NOT_VALIDATED[name] in why.summary and "model.architecture" in why.summary
        return
    assert out.validated
    assert out.diffs == {}
    assert out.warned <= MAY_WARN


@pytest.mark.slow
def test_corpus_figures() -> None:
    """imported / validated as imported / compiled / equal / warned / silent, printed as the
    import reference (docs/reference/import-and-models.md) quotes it (``-s``)."""
    outs = [_outcome(n) for n in CONFIGS]
    valid = [o for o in outs if o.validated]
    equal = [o for o in valid if not o.diffs and not o.warned]
    warned = [o for o in valid if o.warned and not o.diffs]
    silent = [o for o in valid if o.diffs]
    print(f"trl corpus: {len(outs)} imported, {len(valid)} validated, {len(valid)} compiled, "
          f"{len(equal)} equal, {len(warned)} warned, {len(silent)} silent "
          f"(warned fields: {sorted(set().union(*(o.warned for o in outs)))})")
    assert silent == []
    assert len(valid) == len(outs) - len(NOT_VALIDATED)


def test_mixture_is_read_with_located_warnings() -> None:
    imported = import_trl(CORPUS / "handbook-2025-zephyr-7b-beta-sft-full.yaml")
    mixture = imported.data["data"]["mixture"]
    # weight 1.0 each: the handbook keeps every row of both and concatenates them
    assert mixture["strategy"] == "concatenate"
    assert [(m["uri"], m["split"], m["subset"], m.get("proportion")) for m in
            mixture["datasets"]] == [
        ("hf://HuggingFaceH4/ultrachat_200k", "train_sft", "default", None),
        ("hf://HuggingFaceH4/ultrachat_200k", "test_sft", "default", None)]
    at = {w.path: w for w in imported.warnings}
    assert ("dataset_mixture",) not in at
    assert at[("dataset_mixture", "test_split_size")].span.line == 23  # type: ignore[union-attr]
    assert imported.data["training"]["evaluation"]["strategy"] == "no"


@pytest.mark.parametrize(("mixture", "line", "what"), [
    ("dataset_mixture: {seed: 1}\n", 3, "needs a non-empty `datasets` list"),
    ("dataset_mixture:\n  datasets:\n    - split: train\n", 5, "datasets[0] has no `id`"),
    ("dataset_mixture:\n  datasets:\n    - id: a/b\n      weight: -1\n", 6,
     "weight -1 is not a positive number"),
])
def test_bad_mixture_is_located_at_its_key(tmp_path: Path, mixture: str, line: int,
                                           what: str) -> None:
    from ftspec.spec.diagnostics import SpecError

    cfg = tmp_path / "sft.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\nbf16: true\n" + mixture)
    with pytest.raises(SpecError) as info:
        import_trl(cfg)
    (diag,) = info.value.diagnostics
    assert what in diag.summary
    assert diag.span is not None and diag.span.line == line


def test_no_data_names_both_keys(tmp_path: Path) -> None:
    cfg = tmp_path / "sft.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\n")
    with pytest.raises(NotThisTool) as info:
        import_trl(cfg)
    assert "no dataset_name (or dataset_mixture)" in info.value.diagnostics[0].summary


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
    assert "tf32" in warned
    [note] = [w for w in imported.warnings if w.code == "import.no-effect"]  # not warnings
    assert all(f"{key} (line" in note.summary and key not in warned
               for key in ("hub_model_id", "push_to_hub", "preprocessing_num_workers"))
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


def test_renamed_keys_are_said_where_the_installed_trl_refuses_them(tmp_path: Path) -> None:
    """The handbook's recipes (written for trl>=0.19.1, transformers>=4.53.3) say
    max_seq_length, torch_dtype and warmup_ratio: the installed TRL's own parser refuses
    them, the import reads them as those releases did and says so at each key."""
    import json

    from ruamel.yaml import YAML

    name = "handbook-2025-zephyr-7b-gemma-sft-full.yaml"
    raw = dict(YAML(typ="safe").load((CORPUS / name).read_text()))
    handbook_own = {"dataset_mixture", "chat_template"}  # the handbook's dataclasses add them
    plain = tmp_path / "plain.yaml"
    plain.write_text(json.dumps(  # JSON is YAML; TRL's loader reads it as written
        {k: v for k, v in raw.items() if k not in handbook_own} | {"use_cpu": True}))
    parser = trl.TrlParser((trl.ScriptArguments, trl.SFTConfig, trl.ModelConfig))
    with pytest.raises(ValueError, match="Unknown arguments") as refused:
        parser.parse_args_and_config(args=["--config", str(plain)])
    imported = import_trl(CORPUS / name)
    renamed = {w.path[0]: w for w in imported.warnings
               if w.path and "as those releases did" in w.summary}
    assert set(renamed) == {"max_seq_length", "torch_dtype", "warmup_ratio"}
    assert all(f"--{key}" in str(refused.value) for key in renamed)
    assert "read as max_length 2048" in renamed["max_seq_length"].summary
    assert renamed["max_seq_length"].span is not None
    assert renamed["max_seq_length"].span.line == 45
    assert imported.data["data"]["max_seq_len"] == 2048


def test_dataset_kwargs_trl_no_longer_reads_are_said_to_change_nothing() -> None:
    """TRL 0.15+ reads only skip_prepare_dataset from dataset_kwargs (the installed one too)."""
    import inspect

    source = inspect.getsource(trl.SFTTrainer)
    assert "append_concat_token" not in source and "skip_prepare_dataset" in source
    imported = import_trl(CORPUS / "handbook-2025-zephyr-7b-gemma-sft-full.yaml")
    (w,) = [w for w in imported.warnings if w.path == ("dataset_kwargs",)]
    assert "add_special_tokens, append_concat_token" in w.summary
    assert "change nothing" in w.summary
    assert w.span is not None and w.span.line == 29


@pytest.mark.parametrize(("rows", "same"), [("chat_template: '{{ x }}'\n", True), ("", False)])
def test_eos_token_says_whether_the_rows_train_alike(tmp_path: Path, rows: str,
                                                     same: bool) -> None:
    """TRL appends eos_token to text / completion rows only (open-r1's recipes set it for
    chat rows, where it changes no trained token)."""
    cfg = tmp_path / "sft.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: a/b\n"
                   f"eos_token: <|im_end|>\n{rows}")
    (w,) = [w for w in import_trl(cfg).warnings if w.path == ("eos_token",)]
    assert ("the same tokens train" in w.summary) is same
    assert ("trains differently" in w.summary) is not same
    assert w.span is not None and w.span.line == 3


@pytest.mark.parametrize(("written", "modules", "warned"), [
    ("all-linear", ["all-linear"], None),
    ("[all-linear]", ["all-linear"], None),
    ("[q_proj, v_proj]", ["q_proj", "v_proj"], None),
    ("[q_proj]", ["q_proj"], "matches no module there"),
    ("q_proj", ["q_proj"], "matches no module there"),
    ("'.*\\.(q|v)_proj'", None, "cannot express"),
])
def test_lora_target_modules_as_peft_reads_them(tmp_path: Path, written: str,
                                                modules: list[str] | None,
                                                warned: str | None) -> None:
    """TRL's ModelConfig turns a one-item list into a string, and PEFT full-matches a string
    (but all-linear) against each module's whole path: what imports as names, what is said."""
    from peft import LoraConfig
    from peft.tuners.tuners_utils import check_target_module_exists

    cfg = tmp_path / "sft.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: a/b\nuse_peft: true\n"
                   f"lora_target_modules: {written}\n")
    imported = import_trl(cfg)
    assert imported.data["method"]["lora"].get("target_modules") == modules
    said = [w for w in imported.warnings if w.path == ("lora_target_modules",)]
    assert [warned in w.summary for w in said] == ([True] if warned else [])
    assert all(w.span is not None and w.span.line == 4 for w in said)
    if warned == "matches no module there":  # the source's own run adapts nothing
        source = trl.ModelConfig(use_peft=True, lora_target_modules=modules)
        key = "model.layers.0.self_attn.q_proj"
        assert not check_target_module_exists(LoraConfig(
            target_modules=source.lora_target_modules), key)
        assert check_target_module_exists(LoraConfig(target_modules=["q_proj"]), key)
