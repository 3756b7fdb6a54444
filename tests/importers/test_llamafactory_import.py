"""``ftspec import llamafactory``: every corpus config (LLaMA-Factory's own SFT examples)
imports, validates and compiles with ``--target accelerate``, and each hyper-parameter TRL
reads from the compiled config equals the source's effective value (the source's, else
LLaMA-Factory's / transformers' default from ``llamafactory_defaults``); a comparison the
importer warned about at its key is counted as warned. Corpus:
``tests/importers/corpus/llamafactory`` (sources in its SOURCES file).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.importers.base import NotThisTool
from ftspec.compiler.importers.llamafactory import import_llamafactory
from ftspec.compiler.importers.llamafactory_defaults import (
    DATASETS,
    MODEL_DEFAULTS,
    TRAIN_DEFAULTS,
)
from ftspec.compiler.importers.trl import OPTIMIZERS
from ftspec.spec.diagnostics import SpecError
from helpers.corpus_check import (
    Corpus,
    Expect,
    Got,
    compiled_loraplus,
    from_source,
    loraplus,
    selected,
    trainable,
    trl_value,
)
from helpers.trl_parse import stored_and_computed
from helpers.trl_parse import target_modules as _modules

pytest.importorskip("trl")

CORPUS = Path(__file__).parent / "corpus" / "llamafactory"
TRL_NAME = {"cutoff_len": "max_length", "lora_rank": "lora_r", "warmup_ratio": "warmup_steps"}


def _precision(s: dict[str, Any]) -> tuple[str, str | None]:
    """(weights' dtype, autocast dtype): the weights load in compute_dtype (bf16 / fp16
    from the flags), trainable ones upcast to fp32 unless pure_bf16 (which LLaMA-Factory
    runs with bf16 off: no autocast); TrainingArguments autocasts with bf16 / fp16."""
    if s.get("fp16") is True:
        return "float32", "float16"
    if s.get("pure_bf16") is True:
        return "bfloat16", None
    if s.get("bf16") is not True:
        return "float32", None
    full = s.get("finetuning_type", "lora") in ("full", "freeze")
    return ("float32" if full else "bfloat16"), "bfloat16"





def _default(key: str) -> Any:
    name = TRL_NAME.get(key, key)
    return TRAIN_DEFAULTS.get(name, MODEL_DEFAULTS.get(name))


src = from_source(_default)
trl = trl_value


def _lora(s: dict[str, Any]) -> bool:
    return s.get("finetuning_type", "lora") == "lora"


def _peft(name: str) -> Got:
    return lambda r: getattr(r.model, name) if r.model.use_peft else None


def _targets(s: dict[str, Any]) -> set[str] | None:
    if not _lora(s):
        return None
    target = str(s.get("lora_target", "all"))
    return {"all-linear"} if target == "all" else set(target.split(","))


def _sources(s: dict[str, Any]) -> list[str]:
    names = [n.strip() for n in str(s["dataset"]).split(",")]
    return [DATASETS[n][0].replace("file://", "") if n in DATASETS else f"data/{n}.json"
            for n in names]


PROBE = [f"model.layers.{i}.{m}" for i in range(32) for m in (
    "self_attn.q_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight")] + [
    "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
"""Parameter names (a 32-layer Llama) the freezing patterns are compared on."""


def _freeze_selects(s: dict[str, Any]) -> list[str] | None:
    """LLaMA-Factory's freeze tuning (adapter.py): a name trains when it contains
    ``.{layer}.{module}`` for the last freeze_trainable_layers layers (default 2; negative:
    the first ones; with use_llama_pro every (layers / n)-th layer, the last of each stride)
    and freeze_trainable_modules (default all: ``.{layer}.``), or one of
    freeze_extra_modules."""
    if s.get("finetuning_type") != "freeze":
        return None
    n, layers = int(s.get("freeze_trainable_layers", 2)), 32
    ids = range(layers - n, layers) if n > 0 else range(-n)
    if s.get("use_llama_pro") is True:
        ids = range(layers // n - 1, layers, layers // n)
    modules = [m.strip() for m in str(s.get("freeze_trainable_modules", "all")).split(",")]
    keys = [f".{i}.{'' if m == 'all' else m}" for m in modules for i in ids]
    keys += [m.strip() for m in str(s.get("freeze_extra_modules") or "").split(",") if m.strip()]
    return [name for name in PROBE if any(k in name for k in keys)]


def _warmup_kind(value: float, max_steps: int, below_one_is_ratio: bool) -> tuple[str, float]:
    """Warmup as ("steps", n) or ("ratio", r): a ratio becomes steps (rounded up) where the
    run's length is a step count."""
    if below_one_is_ratio and 0 < value < 1:
        return ("steps", math.ceil(max_steps * value)) if max_steps > 0 else ("ratio", value)
    return ("steps", value)


def _warmup_4x(s: dict[str, Any]) -> tuple[str, float]:
    """transformers 4.57.1's ``get_warmup_steps``: warmup_steps (steps, even below 1) when
    above 0, else warmup_ratio."""
    steps, max_steps = s.get("warmup_steps", 0), s.get("max_steps", -1)
    if steps > 0:
        return _warmup_kind(steps, max_steps, below_one_is_ratio=False)
    ratio = s.get("warmup_ratio", 0.0)
    return _warmup_kind(ratio, max_steps, below_one_is_ratio=True) if ratio else ("steps", 0)


def _eval_strategy(s: dict[str, Any]) -> str:
    """eval_strategy, or evaluation_strategy as transformers before 4.46 read it (the
    importer reads it so and warns that 4.57.1 refuses it)."""
    return str(s.get("eval_strategy", s.get("evaluation_strategy", "no")))


def _evaluating(s: dict[str, Any]) -> bool:
    return _eval_strategy(s) != "no"


FIELDS: dict[str, tuple[str, Expect, Got]] = {
    name: (name, src(name), trl(name)) for name in (
        "per_device_train_batch_size", "gradient_accumulation_steps", "lr_scheduler_type",
        "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm", "seed",
        "logging_steps", "save_steps")
} | {
    "eval_strategy": ("eval_strategy", _eval_strategy, trl("eval_strategy")),
    "learning_rate": ("learning_rate", src("learning_rate", float), trl("learning_rate")),
    "num_train_epochs": ("num_train_epochs", src("num_train_epochs", float),
                         trl("num_train_epochs")),
    "warmup": ("warmup_steps", _warmup_4x,
               lambda r: _warmup_kind(r.sft.warmup_steps, r.sft.max_steps, True)),
    # activation checkpointing: the model's, or FSDP's own under accelerate's FSDP
    "gradient_checkpointing": ("gradient_checkpointing", src("gradient_checkpointing"),
                               lambda r: r.checkpointing),
    "optim": ("optim", src("optim", lambda v: OPTIMIZERS[v]), trl("optim", OPTIMIZERS.get)),
    "max_length": ("cutoff_len", src("cutoff_len"), trl("max_length")),
    "packing": ("packing", src("packing"), trl("packing")),
    # (weights' dtype, compute dtype): LLaMA-Factory upcasts trainable weights to fp32 unless
    # pure_bf16, so a bf16 full fine-tune keeps fp32 weights; LoRA keeps the bf16 base
    "precision": ("bf16", _precision, lambda r: stored_and_computed(r.sft, r.model)),
    "eval_steps": ("eval_steps", lambda s: s.get("eval_steps") if _evaluating(s) else None,
                   lambda r: r.sft.eval_steps if r.sft.eval_strategy.value != "no" else None),
    "per_device_eval_batch_size": ("per_device_eval_batch_size", lambda s: s.get(
        "per_device_eval_batch_size") if _evaluating(s) else None, lambda r:
        r.sft.per_device_eval_batch_size if r.sft.eval_strategy.value != "no" else None),
    "use_peft": ("finetuning_type", _lora, trl("use_peft")),
    "lora_r": ("lora_rank", lambda s: src("lora_rank")(s) if _lora(s) else None,
               _peft("lora_r")),
    "lora_alpha": ("lora_alpha", lambda s: s.get("lora_alpha", 2 * src("lora_rank")(s))
                   if _lora(s) else None, _peft("lora_alpha")),
    "lora_dropout": ("lora_dropout", lambda s: src("lora_dropout")(s) if _lora(s) else None,
                     _peft("lora_dropout")),
    "lora_target_modules": ("lora_target", _targets, lambda r: _modules(
        r.model.lora_target_modules) if r.model.use_peft else None),
    "load_in_4bit": ("quantization_bit", lambda s: s.get("quantization_bit") == 4,
                     trl("load_in_4bit")),
    "bnb_4bit": ("quantization_type", lambda s: (
        s.get("quantization_type", "nf4"), s.get("double_quantization", True))
        if s.get("quantization_bit") == 4 else None, lambda r: (
        r.model.bnb_4bit_quant_type, r.model.use_bnb_nested_quant)
        if r.model.load_in_4bit else None),
    # LLaMA-Factory stores the 4-bit weights in the compute dtype (quantization.py)
    "bnb_4bit_quant_storage": ("quantization_bit", lambda s: (_precision(s)[1] or "float32")
                               if s.get("quantization_bit") == 4 else None,
                               lambda r: r.model.bnb_4bit_quant_storage
                               if r.model.load_in_4bit else None),
    "trust_remote_code": ("trust_remote_code", lambda s: s.get("trust_remote_code") is True,
                          trl("trust_remote_code")),
    "report_to": ("report_to", lambda s: [] if s.get("report_to") == "none" else
                  [s["report_to"]], lambda r: [x for x in r.sft.report_to if x != "none"]),
    "validation_split_ratio": ("val_size", lambda s: s.get("val_size") or None,
                               lambda r: r.prepare.get("validation_split_ratio")),
    "train_on_input": ("train_on_prompt", lambda s: s.get("train_on_prompt") is True,
                       lambda r: all(t.get("train_on_input", False) for t in r.prepare["train"])),
    "datasets": ("dataset[].uri", _sources, lambda r: [t["source"] for t in
                                                     r.prepare["train"]]),
    "output_dir": ("output_dir", lambda s: Path(s["output_dir"]),
                   lambda r: Path(r.sft.output_dir)),
    # several datasets: LLaMA-Factory's default mix_strategy concat
    "mixture": ("mix_strategy", lambda s: None if len(_sources(s)) == 1 else
                "concatenate" if s.get("mix_strategy", "concat") == "concat" else "interleave",
                lambda r: r.prepare.get("mixture_strategy") if len(r.prepare.get(
                    "train", [])) > 1 else None),
    "load_in_8bit": ("quantization_bit", lambda s: s.get("quantization_bit") == 8
                     and _lora(s), trl("load_in_8bit")),
    "loraplus_lr_ratio": ("loraplus_lr_ratio", lambda s: loraplus(s, "loraplus_lr_ratio"),
                          compiled_loraplus("loraplus_lr_ratio")),
    "loraplus_lr_embedding": ("loraplus_lr_embedding", lambda s: loraplus(
        s, "loraplus_lr_embedding"), compiled_loraplus("loraplus_lr_embedding")),
    "unfrozen_parameters": ("finetuning_type", _freeze_selects, lambda r: selected(
        trainable("unfrozen_parameters")(r), PROBE)),
    # pissa_init: PEFT's PiSSA (pissa_niter_{pissa_iter}, default 16; -1: the exact SVD)
    "init_weights": ("pissa_iter", lambda s: (
        ("pissa" if s.get("pissa_iter", 16) == -1 else f"pissa_niter_{s.get('pissa_iter', 16)}")
        if s.get("pissa_init") is True else "default") if _lora(s) else None,
        lambda r: r.prepare.get("peft", {}).get("init_weights", "default")
        if r.model.use_peft else None),
}
FIELDS |= {key: (key, lambda s, key=key: s.get(key) is True, lambda r: False) for key in (
    "use_galore", "use_apollo", "use_badam", "use_adam_mini", "use_muon")}
"""Hyper-parameter -> (LLaMA-Factory key, expected from the source, value TRL reads). The
optimizers LLaMA-Factory puts in AdamW's place are never what the compiled config trains
with: a config that turns one on differs there (warned at the key)."""


LAUNCHED = ("examples/extras/fsdp_qlora/llama3_lora_sft.yaml",
            "examples/ascend/qwen3_full_sft_fsdp2.yaml",
            "examples/ascend/qwen3_5_full_sft_fsdp2.yaml")
"""Configs launched by a script beside them or their usage comment (accelerate + FSDP):
their accelerate settings are compared in ``test_llamafactory_launch``."""
CHECKED = Corpus("llamafactory", CORPUS, import_llamafactory, FIELDS,
                 outside_catalog=frozenset({"2026-train_lora-nanbeige42_lora_sft.yaml",
                                            "examples/ascend/qwen3_5_full_sft_fsdp2.yaml"}),
                 nested=(*LAUNCHED, "examples/extras/fp8/llama3_fp8_deepspeed_sft.yaml",
                         "examples/extras/fp8/llama3_fp8_fsdp_sft.yaml"))


def test_corpus_is_there() -> None:
    CHECKED.assert_sources_named(at_least=15)


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKED.configs)
def test_import_validate_compile_equal(name: str) -> None:
    CHECKED.assert_equal(name)


@pytest.mark.slow
def test_corpus_figures() -> None:
    CHECKED.assert_figures(may_warn={"report_to", "warmup", "init_weights", "use_galore",
                                     "use_muon"})


def test_unexpressed_keys_are_located_warnings() -> None:
    imported = import_llamafactory(CORPUS / "qwen2_5_full_sft.yaml")
    by_key = {w.path[0]: w for w in imported.warnings if w.path}
    assert {"rope_scaling", "deepspeed", "template", "dataset"} <= set(by_key)
    [note] = [w for w in imported.warnings if w.code == "import.no-effect"]  # a kernel
    assert "enable_liger_kernel (line" in note.summary
    span = by_key["rope_scaling"].span
    assert span is not None and span.line == 15


def test_other_stages_are_refused_at_their_line(tmp_path: Path) -> None:
    dpo = tmp_path / "llama3_lora_dpo.yaml"
    dpo.write_text("model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\n\n"
                   "stage: dpo\ndataset: dpo_en_demo\n")
    with pytest.raises(SpecError) as info:
        import_llamafactory(dpo)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and (diag.span.line, diag.span.col) == (3, 1)
    assert diag.summary.startswith("stage dpo")


def test_not_a_llamafactory_config(tmp_path: Path) -> None:
    other = tmp_path / "axolotl.yml"
    other.write_text("base_model: Qwen/Qwen2-0.5B\ndatasets:\n  - path: a/b\n")
    with pytest.raises(NotThisTool) as info:
        import_llamafactory(other)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and (diag.span.line, diag.span.col) == (1, 1)


def test_llama_pro_trains_evenly_spaced_layers() -> None:
    """use_llama_pro: the last layer of each (layers / n) stride, as adapter.py picks them;
    a count n does not divide is refused by LLaMA-Factory (None here: warned, not guessed)."""
    from ftspec.compiler.importers.trainable import freeze_layer_ids

    assert list(freeze_layer_ids(32, 8, True) or []) == [3, 7, 11, 15, 19, 23, 27, 31]
    assert list(freeze_layer_ids(40, 8, True) or []) == [4, 9, 14, 19, 24, 29, 34, 39]
    assert freeze_layer_ids(32, 5, True) is None
    assert list(freeze_layer_ids(32, 2, False)) == [30, 31]
    assert list(freeze_layer_ids(32, -3, False)) == [0, 1, 2]


def test_fractional_warmup_steps_are_a_fraction_of_a_step(tmp_path: Path) -> None:
    """transformers 4.57.1 (LLaMA-Factory's) reads warmup_steps 0.1 as 0.1 of a step, not as
    transformers 5's ratio: imported as one warmup step, warned at the key."""
    cfg = tmp_path / "warm.yaml"
    cfg.write_text("model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\nstage: sft\n"
                   "do_train: true\nfinetuning_type: full\ndataset: alpaca_en_demo\n"
                   "report_to: none\nwarmup_steps: 0.1\n")
    imported = import_llamafactory(cfg)
    scheduler = imported.data["training"]["scheduler"]
    assert scheduler["warmup_steps"] == 1 and "warmup_ratio" not in scheduler
    [warning] = [w for w in imported.warnings if w.path == ("warmup_steps",)]
    assert warning.span.line == 7 and "0.1 of one step" in warning.summary


def test_warmup_steps_and_ratio_together(tmp_path: Path) -> None:
    """transformers 4.57.1 warms up by warmup_steps when above 0, else by warmup_ratio: the
    other key is warned as ignored, or read."""
    head = ("model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\nstage: sft\n"
            "do_train: true\nfinetuning_type: full\ndataset: alpaca_en_demo\nreport_to: none\n")
    cfg = tmp_path / "both.yaml"
    cfg.write_text(head + "warmup_steps: 20\nwarmup_ratio: 0.1\n")
    both = import_llamafactory(cfg)
    assert both.data["training"]["scheduler"]["warmup_steps"] == 20
    assert "warmup_ratio" not in both.data["training"]["scheduler"]
    [ignored] = [w for w in both.warnings if w.path == ("warmup_ratio",)]
    assert "ignored" in ignored.summary
    cfg.write_text(head + "warmup_steps: 0\nwarmup_ratio: 0.1\n")
    ratio = import_llamafactory(cfg).data["training"]["scheduler"]
    assert ratio["warmup_ratio"] == 0.1 and "warmup_steps" not in ratio
