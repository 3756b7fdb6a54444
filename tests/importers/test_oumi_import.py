"""``ftspec import oumi``: every corpus config (real Oumi recipes, sources in
``corpus/oumi/SOURCES``) imports, validates and compiles with ``--target accelerate``, and
each hyper-parameter of the compiled run equals the source's effective value under Oumi.

The compiled side is read by the tools that run it: TRL's own argument parser over
``sft.yaml`` (TRL's defaults come from TRL) and accelerate's own config loader. The Oumi side
is the source value, else Oumi 0.9's default (``oumi_defaults``), passed through what
``TrainingParams.to_hf`` and ``core/distributed.py`` hand transformers and accelerate (written
out below, apart from the importer's mapping).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.importers.oumi import import_oumi
from ftspec.compiler.importers.oumi_defaults import (
    FSDP_DEFAULTS,
    MODEL_DEFAULTS,
    PEFT_DEFAULTS,
    PRETRAINING_DATASETS,
    TRAINING_DEFAULTS,
)
from ftspec.spec.loader import parse_yaml
from ftspec.spec.validate import validate_doc
from helpers.trl_parse import compiled_files, stored_and_computed, trl_reads
from ruamel.yaml import YAML

CORPUS = Path(__file__).parent / "corpus" / "oumi"
CONFIGS = sorted(p.name for p in CORPUS.glob("*.yaml"))
JOBS = {"llama3_2-3b_lora-fsdp_train.yaml": "jobs/llama3_2-3b_lora-fsdp_gcp_job.yaml",
        "qwen3-14b_lora-train.yaml": "jobs/qwen3-14b_lora-gcp_job.yaml"}
"""Training configs whose recipe folder ships the job config that launches them."""
SKY_GPUS = {"A100": "nvidia-a100-40gb"}
AUTOCAST = {"BF16": "bfloat16", "FP16": "float16"}

trl = pytest.importorskip("trl")


def _load(path: Path) -> dict[str, Any]:
    return dict(YAML(typ="safe").load(path.read_text()))


def _import(name: str) -> tuple[Any, dict[str, Any], dict[str, Any] | None]:
    src = _load(CORPUS / name)
    job = _load(CORPUS / JOBS[name]) if name in JOBS else None
    fsdp = bool(src.get("fsdp", {}).get("enable_fsdp"))
    imported = import_oumi(CORPUS / name, job=CORPUS / JOBS[name] if job else None,
                           nproc=None if job else (4 if fsdp else None))
    return imported, src, job


def _oumi_effective(src: dict[str, Any], job: dict[str, Any] | None) -> dict[str, Any]:
    """What Oumi 0.9 trains with: source value, else its default, as ``to_hf`` passes it."""
    t = TRAINING_DEFAULTS | src.get("training", {})
    m = MODEL_DEFAULTS | src["model"]
    p = PEFT_DEFAULTS | src.get("peft", {})
    f = FSDP_DEFAULTS | src.get("fsdp", {})
    peft = bool(t["use_peft"])
    warm = t["warmup_steps"] if t["warmup_steps"] is not None else t["warmup_ratio"] or 0
    sinks = [s for s, k in (("wandb", "enable_wandb"), ("tensorboard", "enable_tensorboard"),
                            ("mlflow", "enable_mlflow")) if t[k]]
    default_max_length = trl_reads({})[1].max_length
    out: dict[str, Any] = {
        "learning_rate": float(t["learning_rate"]),
        "per_device_train_batch_size": t["per_device_train_batch_size"],
        "gradient_accumulation_steps": t["gradient_accumulation_steps"],
        "duration": ("steps", t["max_steps"]) if t["max_steps"] > 0 else
                    ("epochs", float(t["num_train_epochs"])),
        "lr_scheduler_type": t["lr_scheduler_type"], "warmup_steps": warm,
        "weight_decay": float(t["weight_decay"]), "adam_beta1": t["adam_beta1"],
        "adam_beta2": t["adam_beta2"], "adam_epsilon": t["adam_epsilon"],
        "max_grad_norm": float(t["max_grad_norm"] or 0.0), "optim": t["optimizer"],
        "seed": t["seed"], "logging_steps": t["logging_steps"],
        "logging_strategy": t["logging_strategy"], "eval_strategy": t["eval_strategy"],
        "save_strategy": "steps" if t["save_steps"] > 0 else
                         "epoch" if t["save_epoch"] else "no",
        # save_steps is read with the steps strategy only
        "save_steps": t["save_steps"] if t["save_steps"] > 0 else None,
        "report_to": sorted(sinks),
        "torch_compile": t["compile"],
        "activation_checkpointing": t["enable_gradient_checkpointing"],
        "max_length": m["model_max_length"] or default_max_length,
        # (weights' dtype, autocast dtype): Oumi autocasts only with mixed_precision_dtype
        "precision": (m["torch_dtype_str"], AUTOCAST.get(str(t["mixed_precision_dtype"])
                                                         .upper())),
        "model_name_or_path": m["model_name"],
        "trust_remote_code": m["trust_remote_code"],
        "attn_implementation": m["attn_implementation"],
        "use_peft": peft,
    }
    if peft:
        out.update(lora_r=p["lora_r"], lora_alpha=float(p["lora_alpha"]),
                   lora_dropout=float(p["lora_dropout"]),
                   lora_target_modules=p["lora_target_modules"],
                   load_in_4bit=bool(p["q_lora"]) and p["q_lora_bits"] == 4)
        if p["q_lora"]:
            out.update(bnb_4bit_quant_type=p["bnb_4bit_quant_type"],
                       use_bnb_nested_quant=p["use_bnb_nested_quant"],
                       bnb_4bit_quant_storage=p["bnb_4bit_quant_storage"])
    if f["enable_fsdp"]:  # core/distributed.py's FSDP_* environment, as accelerate names it
        orig = f["use_orig_params"] if f["use_orig_params"] is not None else \
            not (peft and not t["compile"])
        out["fsdp"] = {
            "fsdp_version": 1, "fsdp_reshard_after_forward": f["sharding_strategy"],
            "fsdp_offload_params": f["cpu_offload"],
            "fsdp_backward_prefetch": f["backward_prefetch"],
            "fsdp_forward_prefetch": f["forward_prefetch"],
            "fsdp_state_dict_type": f["state_dict_type"],
            "fsdp_auto_wrap_policy": f["auto_wrap_policy"],
            # Oumi hands accelerate the class names (simplify_transformer_layer_cls_string)
            "fsdp_transformer_layer_cls_to_wrap": f["transformer_layer_cls"] and ",".join(
                n.strip().rsplit(".", 1)[-1] for n in f["transformer_layer_cls"].split(",")),
            "fsdp_sync_module_states": f["sync_module_states"],
            "fsdp_use_orig_params": orig, "fsdp_cpu_ram_efficient_loading": True,
        }
    if job is not None:
        gpu, count = str(job["resources"]["accelerators"]).split(":")
        out["processes"] = (int(count) * int(job.get("num_nodes", 1)),
                            int(job.get("num_nodes", 1)), SKY_GPUS[gpu])
    return out


def _ftspec_effective(files: dict[str, Any], imported: Any, fsdp_keys: list[str],
                      tmp_path: Path) -> dict[str, Any]:
    """The same quantities, read from the compiled files by TRL's and accelerate's readers."""
    from accelerate.commands.config.config_args import load_config_from_file

    script, sft, model, _ = trl_reads(files["sft.yaml"])
    del script
    acc_path = tmp_path / "accelerate.yaml"
    acc_path.write_text(files["accelerate.yaml"])
    acc = load_config_from_file(str(acc_path)).to_dict()
    fsdp_cfg = acc.get("fsdp_config") or {}
    out: dict[str, Any] = {
        "learning_rate": sft.learning_rate,
        "per_device_train_batch_size": sft.per_device_train_batch_size,
        "gradient_accumulation_steps": sft.gradient_accumulation_steps,
        "duration": ("steps", sft.max_steps) if sft.max_steps > 0 else
                    ("epochs", sft.num_train_epochs),
        "lr_scheduler_type": str(getattr(sft.lr_scheduler_type, "value", sft.lr_scheduler_type)),
        "warmup_steps": sft.warmup_steps, "weight_decay": sft.weight_decay,
        "adam_beta1": sft.adam_beta1, "adam_beta2": sft.adam_beta2,
        "adam_epsilon": sft.adam_epsilon, "max_grad_norm": sft.max_grad_norm,
        "optim": str(getattr(sft.optim, "value", sft.optim)), "seed": sft.seed,
        "logging_steps": sft.logging_steps,
        "logging_strategy": str(getattr(sft.logging_strategy, "value", sft.logging_strategy)),
        "eval_strategy": str(getattr(sft.eval_strategy, "value", sft.eval_strategy)),
        "save_strategy": str(getattr(sft.save_strategy, "value", sft.save_strategy)),
        "save_steps": sft.save_steps if str(getattr(sft.save_strategy, "value",
                                                    sft.save_strategy)) == "steps" else None,
        "report_to": sorted(sft.report_to or []),
        # compiled by the Trainer (torch_compile) or by accelerate (its dynamo backend)
        "torch_compile": bool(sft.torch_compile or (acc.get("dynamo_config") or {}).get(
            "dynamo_backend", "NO") != "NO"),
        "activation_checkpointing": bool(sft.gradient_checkpointing
                                         or fsdp_cfg.get("fsdp_activation_checkpointing")),
        "max_length": sft.max_length,
        "precision": stored_and_computed(sft, model),
        "model_name_or_path": model.model_name_or_path,
        "trust_remote_code": sft.trust_remote_code,
        "attn_implementation": model.attn_implementation,
        "use_peft": model.use_peft,
    }
    if model.use_peft:
        out.update(lora_r=model.lora_r, lora_alpha=float(model.lora_alpha),
                   lora_dropout=model.lora_dropout,
                   lora_target_modules=model.lora_target_modules,
                   load_in_4bit=model.load_in_4bit)
        if model.load_in_4bit:
            out.update(bnb_4bit_quant_type=model.bnb_4bit_quant_type,
                       use_bnb_nested_quant=model.use_bnb_nested_quant,
                       bnb_4bit_quant_storage=model.bnb_4bit_quant_storage)
    if fsdp_keys:
        out["fsdp"] = {k: fsdp_cfg.get(k) for k in fsdp_keys}
    out["processes"] = (acc["num_processes"], acc["num_machines"],
                            imported.data["resources"]["accelerator"])
    return out


def test_corpus_is_there() -> None:
    assert len(CONFIGS) >= 6
    sources = (CORPUS / "SOURCES").read_text()
    assert all(name in sources for name in CONFIGS + list(JOBS.values()))


def _check(name: str, tmp_path: Path) -> dict[str, bool]:
    imported, src, job = _import(name)
    steps = {"imported": not any(w.is_error for w in imported.warnings)}
    validated = validate_doc(parse_yaml(imported.text, f"{name}.ftspec.yaml"))
    steps["validated"] = validated.ok
    files = compiled_files(imported.text, name)
    steps["compiled"] = True
    want = _oumi_effective(src, job)
    got = _ftspec_effective(files, imported, list(want.get("fsdp", {})), tmp_path)
    diffs = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
    warned_at = {w.path for w in imported.warnings}
    warned = {k for k in diffs if MAY_WARN.get(k) in warned_at}
    assert {k: v for k, v in diffs.items() if k not in warned} == {}, name
    if "train" in files["prepare.json"]:
        (train,) = files["prepare.json"]["train"]
    else:  # text rows of a hub dataset: TRL loads them itself
        script, sft, _, _ = trl_reads(files["sft.yaml"])
        train = {"source": "hf://" + script.dataset_name, "format": "text",
                 "split": script.dataset_train_split, "text_field": sft.dataset_text_field}
    dataset = src["data"]["train"]["datasets"][0]
    assert train["source"] == "hf://" + dataset["dataset_name"]
    assert train.get("split", "train") == dataset.get("split", "train")
    if train["format"] == "text":  # a pretraining dataset: its documents, every token
        assert train["text_field"] == PRETRAINING_DATASETS[dataset["dataset_name"]]
    else:
        assert train["train_on_input"] is True  # Oumi's SFT datasets train on every token
    steps["equal"] = True
    steps["warned"] = bool(warned)
    return steps


MAY_WARN = {"eval_strategy": ("training", "eval_strategy")}
"""Compared field -> the source key whose warning covers a difference: an eval_strategy
without validation data, which transformers' Trainer refuses under Oumi (imported off)."""


@pytest.mark.slow
@pytest.mark.parametrize("name", CONFIGS)
def test_import_validate_compile_equal(name: str, tmp_path: Path) -> None:
    steps = _check(name, tmp_path)
    warned = steps.pop("warned")
    assert all(steps.values())
    assert warned is (name in WARNED)


WARNED = {"2026-gemma2-2b_full-train.yaml", "2026-gemma3-4b_full-train.yaml"}
"""Recipes that ask for evaluation by steps without validation data (Oumi stops at start)."""


@pytest.mark.slow
def test_corpus_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    counts = dict.fromkeys(("imported", "validated", "compiled", "equal", "warned"), 0)
    for name in CONFIGS:
        for step, ok in _check(name, tmp_path).items():
            counts[step] += ok
    with capsys.disabled():
        print(f"\noumi corpus: {counts['imported']} imported, {counts['validated']} "
              f"validated, {counts['compiled']} compiled, {counts['equal']} equal "
              f"({counts['equal'] - counts['warned']} on every field, {counts['warned']} "
              "warned), 0 silent")
    assert counts == dict.fromkeys(counts, len(CONFIGS)) | {"warned": len(WARNED)}


FIT_TORCHTUNE = {
    "training.logging.report_to": "training.logging.report_to=[wandb]",
    "training.checkpointing.strategy": "training.checkpointing.strategy=epoch",
    "training.scheduler.name": "training.scheduler.name=cosine",
    "distributed.fsdp.version": "distributed.fsdp.version=2",
    "distributed.fsdp.sharding": "distributed.fsdp.sharding=full_shard",
    "method.quantization.double_quant": "method.quantization.double_quant=true",
    "method.quantization.storage_dtype": "method.quantization.storage_dtype=uint8",
}
"""What Oumi's recipes ask and torchtune 0.6.1's recipes cannot run (one metric logger, a
checkpoint per epoch, a cosine schedule only, FSDP2 without hybrid sharding, fixed NF4
storage): ``validate --target torchtune`` refuses each at its line; the value that fits."""


def _torchtune_configs() -> list[str]:
    from ftspec.spec.catalog.models import MODEL_FAMILIES

    out = []
    for name in CONFIGS:
        family = import_oumi(CORPUS / name).data["model"].get("family")
        if family is not None and MODEL_FAMILIES[family].torchtune is not None:
            out.append(name)
    return out


TORCHTUNE_MISFITS = {
    "2026-gemma2-2b_full-train.yaml": "method.kind",  # no shipped single-device full config
    "2026-qwen2_5-7b_full-train.yaml": "training.scheduler.warmup_ratio",
    "2026-phi4-reasoning_plus-lora_train.yaml": "method.lora.target_modules",  # qkv_proj
}
"""Recipes of torchtune families that need more than a value change to run there: the
refusal that says so (located, at the field named)."""


def test_torchtune_misfits_are_refused_at_the_field() -> None:
    from ftspec.compiler.pipeline import CompileOptions, compile_spec
    from ftspec.spec.overrides import apply_sets

    for name, field in TORCHTUNE_MISFITS.items():
        imported, _, _ = _import(name)
        doc = apply_sets(parse_yaml(imported.text, name), ["launcher=torchtune"])
        refused = compile_spec(doc, "artifacts", CompileOptions(target="torchtune"))
        errors = {".".join(map(str, d.path or ())) for d in refused.diagnostics if d.is_error}
        assert field in errors, (name, errors)


@pytest.mark.slow
def test_torchtune_launcher_where_it_fits() -> None:
    """For the families torchtune ships, the import compiles with ``launcher: torchtune``
    once the settings torchtune's recipes lack are refused (located) and set to what fits;
    the torchtune run then trains as the accelerate run of that spec does."""
    from ftspec.compiler.pipeline import CompileOptions, compile_spec
    from ftspec.spec.overrides import apply_sets
    from helpers.readback import read_accelerate, read_torchtune

    names = _torchtune_configs()
    assert len(names) >= 5
    assert set(TORCHTUNE_MISFITS) <= set(names)
    for name in sorted(set(names) - set(TORCHTUNE_MISFITS)):
        imported, _, _ = _import(name)
        doc = apply_sets(parse_yaml(imported.text, name), ["launcher=torchtune"])
        refused = compile_spec(doc, "artifacts", CompileOptions(target="torchtune"))
        errors = {".".join(map(str, d.path or ())) for d in refused.diagnostics if d.is_error}
        assert errors and errors <= set(FIT_TORCHTUNE), (name, errors)
        assert all(d.span is not None and d.span.line > 1
                   for d in refused.diagnostics if d.is_error)
        fitted = apply_sets(doc, [FIT_TORCHTUNE[e] for e in sorted(errors)])
        tt = compile_spec(fitted, "artifacts", CompileOptions(target="torchtune"))
        assert tt.ok, (name, [d.format() for d in tt.diagnostics if d.is_error])
        acc = compile_spec(apply_sets(fitted, ["launcher=accelerate"]), "artifacts",
                           CompileOptions(target="accelerate"))
        files = {n: {a.path: a.content for a in c.artifacts} for n, c in (("tt", tt),
                                                                          ("acc", acc))}
        assert read_torchtune(files["tt"]) == read_accelerate(files["acc"]), name


def test_stream_says_the_row_order_differs() -> None:
    imported = import_oumi(CORPUS / "2026-llama3_1-8b_full-longctx_train.yaml")
    (w,) = [w for w in imported.warnings if w.path == ("data", "train", "stream")]
    assert w.span is not None and w.span.line == 52
    assert "the same rows in another order" in w.summary and "pack: true" in w.summary
