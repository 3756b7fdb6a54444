"""``ftspec import axolotl``: every corpus config imports, validates and compiles with
``--target accelerate``, and each hyper-parameter TRL reads from the compiled config equals
the source's effective value (the source's, else axolotl's default from
``axolotl_defaults``); a comparison the importer warned about at its key is counted as
warned. Corpus: ``tests/importers/corpus/axolotl`` (sources in its SOURCES file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.importers.axolotl import import_axolotl
from ftspec.compiler.importers.axolotl_defaults import MODEL_DEFAULTS, TRAIN_DEFAULTS
from ftspec.compiler.importers.base import NotThisTool
from ftspec.compiler.importers.trl import OPTIMIZERS
from ftspec.spec.diagnostics import SpecError
from helpers.corpus_check import (
    Corpus,
    Expect,
    Got,
    Read,
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

CORPUS = Path(__file__).parent / "corpus" / "axolotl"
TRL_NAME = {"micro_batch_size": "per_device_train_batch_size", "num_epochs": "num_train_epochs",
            "optimizer": "optim", "lr_scheduler": "lr_scheduler_type",
            "sequence_len": "max_length", "sample_packing": "packing"}


def _weights(s: dict[str, Any]) -> str:
    """The dtype axolotl loads the weights in (its bf16 default is auto: bf16 on GPUs)."""
    if s.get("fp16"):
        return "float16"
    return "bfloat16" if s.get("bf16", "auto") in ("auto", True) else "float32"



src = from_source(lambda key: TRAIN_DEFAULTS.get(TRL_NAME.get(key, key), MODEL_DEFAULTS.get(key)))
trl = trl_value


def _optim(name: str) -> tuple[str, bool]:
    return OPTIMIZERS[str(name)]


def _targets(s: dict[str, Any]) -> set[str] | None:
    if s.get("adapter") is None:
        return None
    if s.get("lora_target_linear"):
        return {"all-linear"}
    return set(s.get("lora_target_modules") or [])


def _eval(s: dict[str, Any]) -> str:
    if not s.get("val_set_size"):
        return "no"
    if isinstance(s.get("eval_steps"), int):
        return "steps"
    return "epoch" if s.get("evals_per_epoch") else "no"


def _save(s: dict[str, Any]) -> tuple[str, int | None]:
    if isinstance(s.get("save_steps"), int):
        return "steps", s["save_steps"]
    return "epoch", None


def _turn_keys(s: dict[str, Any]) -> list[str | None]:
    out: list[str | None] = []
    for ds in _sets(s):
        if ds.get("type") != "chat_template":
            out.append(None)
            continue
        mapping = ds.get("message_property_mappings") or {
            "role": ds.get("message_field_role", "role"),
            "content": ds.get("message_field_content", "content")}
        out.append("sharegpt" if mapping == {"role": "from", "content": "value"} else "openai")
    return out


STEPS, WARMUP = 100, 10
"""The schedules are compared as learning-rate multipliers over a 100-step run with 10
warm-up steps (the warm-up itself is compared as its own field)."""


def _axolotl_schedule(s: dict[str, Any]) -> str | list[float]:
    """axolotl's schedule: a name, or for its cosine the multipliers its
    ``get_cosine_schedule_with_min_lr`` gives (utils/schedulers.py: (1 - ratio) x the half
    cosine + ratio after a linear warm-up; ratio 0 is transformers' cosine)."""
    import math

    name = src("lr_scheduler")(s)
    ratio = s.get("cosine_min_lr_ratio") or 0.0
    if name == "constant_with_warmup":  # transformers' own, by name: linear warm-up, then 1
        return [round(min(1.0, step / WARMUP), 6) for step in range(STEPS)]
    if name != "cosine" or s.get("cosine_constant_lr_ratio") or s.get("lr_quadratic_warmup"):
        return str(name)
    return [round(step / WARMUP if step < WARMUP else (1 - ratio) * 0.5 * (1 + math.cos(
        math.pi * (step - WARMUP) / (STEPS - WARMUP))) + ratio, 6) for step in range(STEPS)]


def _compiled_schedule(r: Read) -> str | list[float]:
    """The compiled schedule as transformers builds it from sft.yaml (its cosine family as
    multipliers, any other by name)."""
    import torch
    from transformers import get_scheduler

    name = str(getattr(r.sft.lr_scheduler_type, "value", r.sft.lr_scheduler_type))
    if name not in ("cosine", "cosine_with_min_lr", "constant_with_warmup"):
        return name
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = get_scheduler(name, opt, num_warmup_steps=WARMUP, num_training_steps=STEPS,
                          scheduler_specific_kwargs=r.sft.lr_scheduler_kwargs or {})
    out = []
    for _ in range(STEPS):
        out.append(round(sched.get_last_lr()[0], 6))
        opt.step()
        sched.step()
    return out


def _trains(r: Read) -> list[dict[str, Any]]:
    """The training datasets: prepare.json's entries, else the Hub dataset TRL loads by
    name; with ``assistant_only_loss`` TRL reads its rows as conversations, whose turns it
    keys by role/content (no key mapping exists in TRL): the openai style."""
    if "train" in r.prepare:
        return [dict(train) for train in r.prepare["train"]]
    direct = {"source": "hf://" + r.script.dataset_name}
    if r.sft.assistant_only_loss:
        direct.update(format="chat", conversation_style="openai")
    return [direct]


def _sets(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The datasets axolotl trains on: ``datasets``, else the first ``pretraining_dataset``
    entry (the only one it streams)."""
    return s["datasets"] if "datasets" in s else s["pretraining_dataset"][:1]


def _text_fields(s: dict[str, Any]) -> list[str | None]:
    """Each dataset's text column: a completion dataset's ``field``, a pretraining one's
    ``text_column`` (default text)."""
    return [ds.get("field", "text") if ds.get("type") == "completion" else
            ds.get("text_column") or "text" if "datasets" not in s else None
            for ds in _sets(s)]


def _train_on_input(s: dict[str, Any]) -> list[bool]:
    """train_on_inputs per dataset; a pretraining stream's documents train every token."""
    return [s.get("train_on_inputs") is True or "datasets" not in s] * len(_sets(s))


PROBE = [f"{wrap}{name}" for wrap in ("", "base_model.model.") for name in (
    "model.embed_tokens.weight", "lm_head.weight", "model.norm.weight",
    "model.layers.0.self_attn.q_proj.weight", "model.layers.27.mlp.down_proj.weight",
    "model.layers.0.self_attn.q_proj.lora_A.default.weight",
    "model.language_model.layers.0.self_attn.q_proj.weight",
    "model.language_model.layers.0.self_attn.q_proj.lora_B.default.weight",
    "model.language_model.embed_tokens.weight", "model.vision_tower.encoder.layers.0.fc1.weight",
    "model.multi_modal_projector.mm_input_projection_weight",
    "model.layers.2x3.mlp.gate.weight", "model.layers.23.block_sparse_moe.gate.weight")]
"""Parameter names (plain and PEFT-wrapped) the freezing patterns are compared on."""


def _axolotl_selects(s: dict[str, Any]) -> list[str] | None:
    """The names axolotl's ``freeze_layers_except`` leaves trainable, by its documented rule
    (a period is literal unless ``+`` follows it; re.match; a trailing ``[a:b]`` row range
    is not part of the name pattern)."""
    import re

    patterns = s.get("unfrozen_parameters")
    if not patterns:
        return None
    names = [re.sub(r"\[[0-9]*(:[0-9]*)?\]$", "", p) for p in patterns]
    regexes = [re.compile(re.sub(r"\.(?!\+)", r"\\.", n)) for n in names]
    return [n for n in PROBE if any(rx.match(n) for rx in regexes)]


def _fsdp_run(s: dict[str, Any]) -> dict[str, Any] | None:
    """axolotl's FSDPConfig schema has no sharding_strategy / backward_prefetch /
    forward_prefetch field (dropped), and passes its fsdp_config to transformers, whose
    defaults are FULL_STATE_DICT and no CPU-RAM-efficient loading; FSDP1 (axolotl's default
    version) then shards FULL_SHARD (accelerate) with NO_PREFETCH (transformers)."""
    cfg = {k.removeprefix("fsdp_"): v for k, v in (s.get("fsdp_config") or {}).items()}
    if not (s.get("fsdp") or cfg):
        return None
    out = {"state_dict_type": cfg.get("state_dict_type", "FULL_STATE_DICT"),
           "cpu_ram_efficient_loading": bool(cfg.get("cpu_ram_efficient_loading", False))}
    if int(s.get("fsdp_version") or cfg.get("version") or 1) == 1:
        out |= {"sharding_strategy": "FULL_SHARD", "backward_prefetch": "NO_PREFETCH",
                "forward_prefetch": False}
    return out


def _fsdp_compiled(r: Read) -> dict[str, Any] | None:
    cfg = r.accelerate.get("fsdp_config")
    if not cfg:
        return None
    keys = ["state_dict_type", "cpu_ram_efficient_loading"]
    if int(cfg["fsdp_version"]) == 1:
        keys += ["sharding_strategy", "backward_prefetch", "forward_prefetch"]
    return {k: cfg[f"fsdp_{k}"] for k in keys}


FIELDS: dict[str, tuple[str, Expect, Got]] = {
    "per_device_train_batch_size": ("micro_batch_size", src("micro_batch_size"),
                                    trl("per_device_train_batch_size")),
    "gradient_accumulation_steps": ("gradient_accumulation_steps",
                                    src("gradient_accumulation_steps"),
                                    trl("gradient_accumulation_steps")),
    # max_steps above 0 overrides the epochs (transformers ignores num_train_epochs)
    "num_train_epochs": ("num_epochs", lambda s: None if (s.get("max_steps") or 0) > 0 else
                         src("num_epochs", float)(s), lambda r: None if r.sft.max_steps > 0
                         else r.sft.num_train_epochs),
    "learning_rate": ("learning_rate", src("learning_rate", float), trl("learning_rate")),
    "optim": ("optimizer", src("optimizer", _optim), trl("optim", _optim)),
    "lr_scheduler_type": ("lr_scheduler", _axolotl_schedule, _compiled_schedule),
    # warmup_ratio is transformers 5's warmup_steps below 1
    "warmup_steps": ("warmup_steps", lambda s: s.get("warmup_steps", s.get("warmup_ratio")),
                     trl("warmup_steps")),
    "weight_decay": ("weight_decay", src("weight_decay"), trl("weight_decay")),
    "adam_beta1": ("adam_beta1", src("adam_beta1"), trl("adam_beta1")),
    "adam_beta2": ("adam_beta2", src("adam_beta2"), trl("adam_beta2")),
    "adam_epsilon": ("adam_epsilon", src("adam_epsilon"), trl("adam_epsilon")),
    "max_grad_norm": ("max_grad_norm", src("max_grad_norm"), trl("max_grad_norm")),
    "seed": ("seed", src("seed"), trl("seed")),
    "max_length": ("sequence_len", src("sequence_len"), trl("max_length")),
    "packing": ("sample_packing", src("sample_packing"), trl("packing")),
    "gradient_checkpointing": ("gradient_checkpointing", src("gradient_checkpointing"),
                               lambda r: r.checkpointing),
    # (weights' dtype, autocast dtype): axolotl loads the weights in the dtype it autocasts
    # to (TrainingArguments bf16 / fp16 from the same keys)
    "precision": ("bf16", lambda s: (_weights(s), _weights(s) if _weights(s) != "float32"
                                     else None),
                  lambda r: stored_and_computed(r.sft, r.model)),
    "logging_steps": ("logging_steps", src("logging_steps"), trl("logging_steps")),
    "use_peft": ("adapter", lambda s: s.get("adapter") is not None, trl("use_peft")),
    "lora_r": ("lora_r", lambda s: s.get("lora_r") if s.get("adapter") else None,
               lambda r: r.model.lora_r if r.model.use_peft else None),
    "lora_alpha": ("lora_alpha", lambda s: s.get("lora_alpha") if s.get("adapter") else None,
                   lambda r: r.model.lora_alpha if r.model.use_peft else None),
    "lora_dropout": ("lora_dropout", lambda s: src("lora_dropout")(s) if s.get("adapter")
                     else None, lambda r: r.model.lora_dropout if r.model.use_peft else None),
    "lora_target_modules": ("lora_target_modules", _targets, lambda r: _modules(
        r.model.lora_target_modules) if r.model.use_peft else None),
    "load_in_4bit": ("load_in_4bit", lambda s: s.get("load_in_4bit") is True,
                     trl("load_in_4bit")),
    "load_in_8bit": ("load_in_8bit", lambda s: s.get("load_in_8bit") is True,
                     trl("load_in_8bit")),
    "report_to": ("wandb_project", lambda s: ["wandb"] if s.get("wandb_project") else [],
                  lambda r: [x for x in r.sft.report_to if x != "none"]),
    "eval_strategy": ("evals_per_epoch", _eval, trl("eval_strategy")),
    "eval_steps": ("eval_steps", lambda s: s["eval_steps"] if _eval(s) == "steps" else None,
                   lambda r: r.sft.eval_steps if r.sft.eval_strategy.value == "steps"
                   else None),
    "save": ("saves_per_epoch", _save, lambda r: (
        r.sft.save_strategy.value, r.sft.save_steps if r.sft.save_strategy.value == "steps"
        else None)),
    "save_total_limit": ("save_total_limit", src("save_total_limit"), trl("save_total_limit")),
    "validation_split_ratio": ("val_set_size", lambda s: s.get("val_set_size") or None,
                               lambda r: r.prepare.get("validation_split_ratio")),
    "train_on_input": ("train_on_inputs", _train_on_input,
                       lambda r: [t.get("train_on_input", False) for t in _trains(r)]),
    # the keys of each chat turn: axolotl's default role/content, or ShareGPT's from/value
    "turn_keys": ("datasets[].message_property_mappings", _turn_keys,
                  lambda r: [t.get("conversation_style") if t.get("format") == "chat" else None
                             for t in _trains(r)]),
    "dataset": ("datasets[].path", lambda s: ["hf://" + ds["path"] for ds in _sets(s)],
                lambda r: [t["source"] for t in _trains(r)]),
    "text_field": ("datasets[].field", _text_fields,
                   lambda r: [t.get("text_field") for t in _trains(r)]),
    # random initial weights (the compiled run always loads the pretrained ones)
    "reinit_weights": ("reinit_weights", lambda s: s.get("reinit_weights") is True,
                       lambda r: False),
    # sequences split over this many processes (the compiled run never splits one: 1)
    "sequence_parallel": ("sequence_parallel_degree", lambda s: s.get(
        "sequence_parallel_degree", s.get("context_parallel_size", 1)), lambda r: 1),
    # several datasets: axolotl concatenates (and shuffles) them
    "mixture": ("datasets[] (several)", lambda s: "concatenate" if len(_sets(s)) > 1 else None,
                lambda r: r.prepare.get("mixture_strategy") if len(_trains(r)) > 1 else None),
    # the sharding the source asks for reaches accelerate.yaml (a node of GPUs is assumed)
    "distributed_type": ("(sharding)", lambda s: "FSDP" if s.get("fsdp") or s.get("fsdp_config")
                         else "DEEPSPEED" if s.get("deepspeed") else "NO",
                         lambda r: r.accelerate["distributed_type"]),
    # what axolotl's FSDP run does with the keys its schema drops or leaves to transformers
    "fsdp_run": ("(fsdp run)", _fsdp_run, _fsdp_compiled),
    "output_dir": ("output_dir", lambda s: Path(s["output_dir"]),
                   lambda r: Path(r.sft.output_dir)),
    "loraplus_lr_ratio": ("loraplus_lr_ratio", lambda s: loraplus(s, "loraplus_lr_ratio"),
                          compiled_loraplus("loraplus_lr_ratio")),
    "loraplus_lr_embedding": ("loraplus_lr_embedding", lambda s: loraplus(
        s, "loraplus_lr_embedding"), compiled_loraplus("loraplus_lr_embedding")),
    "unfrozen_parameters": ("unfrozen_parameters", _axolotl_selects, lambda r: selected(
        trainable("unfrozen_parameters")(r), PROBE)),
}
"""Hyper-parameter -> (axolotl key, expected from the source, value TRL reads)."""


CHECKED = Corpus("axolotl", CORPUS, import_axolotl, FIELDS,
                 outside_catalog=frozenset({
                     "2026-granite4-granite-4.0-tiny-fft.yaml",
                     "2026-liquidai-lfm2-350m-fft.yaml",
                     "2026-cohere-command-r-7b-qlora.yml"}))


def test_corpus_is_there() -> None:
    CHECKED.assert_sources_named(at_least=6)


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKED.configs)
def test_import_validate_compile_equal(name: str) -> None:
    CHECKED.assert_equal(name)


@pytest.mark.slow
def test_corpus_figures() -> None:
    # logging_steps: without it axolotl logs every 0.5% of the run's steps (1 to 10), which
    # depends on the dataset's size
    CHECKED.assert_figures(may_warn={"eval_strategy", "save", "unfrozen_parameters", "optim",
                                      "gradient_checkpointing", "logging_steps",
                                      "sequence_parallel", "reinit_weights"})


def test_unexpressed_keys_are_located_warnings() -> None:
    imported = import_axolotl(CORPUS / "mistral-qlora.yml")
    by_key = {w.path[0]: w for w in imported.warnings if w.path}
    assert "special_tokens" in by_key
    assert "group_by_length" not in by_key  # false (line 53): nothing trains differently
    [note] = [w for w in imported.warnings if w.code == "import.no-effect"]  # not warnings
    assert all(f"{key} (line" in note.summary and key not in by_key
               for key in ("strict", "is_mistral_derived_model", "eval_table_size"))
    span = note.span
    assert span is not None and span.line == 2


def test_not_an_axolotl_config(tmp_path: Path) -> None:
    other = tmp_path / "trl.yaml"
    other.write_text("model_name_or_path: Qwen/Qwen2-0.5B\ndataset_name: x/y\n")
    with pytest.raises(NotThisTool) as info:
        import_axolotl(other)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and (diag.span.line, diag.span.col) == (1, 1)


def test_preference_training_is_refused_at_its_line(tmp_path: Path) -> None:
    dpo = tmp_path / "dpo.yml"
    dpo.write_text("base_model: Qwen/Qwen2-0.5B\nlearning_rate: 1e-5\nrl: dpo\n"
                   "datasets:\n  - path: a/b\n    type: chatml.intel\n")
    with pytest.raises(SpecError) as info:
        import_axolotl(dpo)
    (diag,) = info.value.diagnostics
    assert diag.span is not None and diag.span.line == 3
    assert "supervised fine-tuning only" in diag.summary


def test_chat_mask_choices_other_than_axolotls_default_are_warned(tmp_path: Path) -> None:
    """axolotl's chat_template default (assistant turns, each with its end-of-turn token) is
    the spec's train_on_input false, silently; other roles or EOS choices are warnings."""
    cfg = tmp_path / "chat.yml"
    base = ("base_model: Qwen/Qwen2.5-0.5B\nlearning_rate: 1e-5\ndatasets:\n"
            "  - path: a/b\n    type: chat_template\n")
    cfg.write_text(base)
    imported = import_axolotl(cfg)
    assert imported.data["data"]["train"]["train_on_input"] is False
    assert not [w for w in imported.warnings if "roles_to_train" in w.summary]
    cfg.write_text(base + "    roles_to_train: [assistant, user]\n    train_on_eos: all\n")
    imported = import_axolotl(cfg)
    by_path = {w.path: w for w in imported.warnings}
    roles = by_path[("datasets", 0, "roles_to_train")]
    assert roles.span is not None and roles.span.line == 6
    assert "other roles' turns are not trained" in roles.summary
    assert ("datasets", 0, "train_on_eos") in by_path


def test_target_linear_adapts_every_linear_layer_of_phi3() -> None:
    """lora_target_linear on Phi-3.5 (fused qkv_proj / gate_up_proj: no q_proj or v_proj)
    compiles to PEFT's all-linear, which TRL's own ModelConfig hands to PEFT; on a tiny
    random Phi-3 model every linear layer of the decoder is adapted, the output head is not."""
    import torch
    from helpers.trl_parse import compiled_files, trl_reads
    from peft import get_peft_model
    from transformers import Phi3Config, Phi3ForCausalLM
    from trl import get_peft_config

    imported = import_axolotl(CORPUS / "2026-phi-lora-3.5.yaml")
    assert imported.data["method"]["lora"]["target_modules"] == ["all-linear"]
    files = compiled_files(imported.text, "phi")
    model_args = trl_reads(files["sft.yaml"])[2]
    torch.manual_seed(0)
    tiny = Phi3ForCausalLM(Phi3Config(hidden_size=32, intermediate_size=64, vocab_size=128,
                                      num_hidden_layers=1, num_attention_heads=4,
                                      num_key_value_heads=4, pad_token_id=0))
    peft_model = get_peft_model(tiny, get_peft_config(model_args))
    adapted = {name.rsplit(".", 1)[-1] for name, mod in peft_model.named_modules()
               if hasattr(mod, "lora_A")}
    assert adapted == {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}


def test_fsdp_layer_class_path_becomes_the_class_name(tmp_path: Path) -> None:
    """A dotted layer class (accelerate matches names) is imported as the class name and
    checked against the model's decoder layer by validate."""
    from ftspec.spec.loader import parse_yaml
    from ftspec.spec.validate import validate_doc

    text = (CORPUS / "qwen2-qlora-fsdp.yaml").read_text()
    assert "fsdp_transformer_layer_cls_to_wrap: Qwen2DecoderLayer" in text
    cfg = tmp_path / "fsdp.yaml"
    cfg.write_text(text.replace(
        "fsdp_transformer_layer_cls_to_wrap: Qwen2DecoderLayer",
        "fsdp_transformer_layer_cls_to_wrap: "
        "transformers.models.qwen2.modeling_qwen2.Qwen2DecoderLayer"))
    imported = import_axolotl(cfg)
    fsdp = imported.data["distributed"]["fsdp"]
    assert fsdp["transformer_layer_cls"] == "Qwen2DecoderLayer"
    assert validate_doc(parse_yaml(imported.text, "spec.yaml")).ok
    cfg.write_text(text.replace("fsdp_transformer_layer_cls_to_wrap: Qwen2DecoderLayer",
                                "fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer"))
    found = validate_doc(parse_yaml(import_axolotl(cfg).text, "spec.yaml"))
    (err,) = [d for d in found.diagnostics.items if d.is_error]
    assert err.code == "rule.fsdp-layer-class" and "Qwen2DecoderLayer" in err.summary


@pytest.mark.parametrize(("written", "modules", "warned"), [
    ("[q_proj]", ["q_proj"], None),  # axolotl hands PEFT the list as it is
    ("q_proj", ["q_proj"], "matches no module there"),
    ("all-linear", ["all-linear"], None),
    ("'.*\\.(q|v)_proj'", None, "cannot express"),
])
def test_lora_target_modules_as_axolotl_hands_them_to_peft(
        tmp_path: Path, written: str, modules: list[str] | None, warned: str | None) -> None:
    """Without lora_target_linear axolotl passes lora_target_modules to PEFT unchanged: a
    string is PEFT's all-linear or a regular expression over each module's whole path."""
    cfg = tmp_path / "lora.yml"
    cfg.write_text("base_model: Qwen/Qwen2.5-0.5B\nlearning_rate: 1e-5\nadapter: lora\n"
                   "lora_r: 8\nlora_alpha: 16\ndatasets:\n  - path: a/b\n    type: alpaca\n"
                   f"lora_target_modules: {written}\n")
    imported = import_axolotl(cfg)
    assert imported.data["method"]["lora"].get("target_modules") == modules
    said = [w for w in imported.warnings if w.path == ("lora_target_modules",)]
    assert [warned in w.summary for w in said] == ([True] if warned else [])
    assert all(w.span is not None and w.span.line == 9 for w in said)
