"""``model.precision`` from each tool's precision keys (issue 24): a tool that trains 16-bit
weights under transformers' autocast of the same dtype imports as ``autocast``, with no
warning; the combinations the spec cannot say are warned at their key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.importers.axolotl import import_axolotl
from ftspec.compiler.importers.llamafactory import import_llamafactory
from ftspec.compiler.importers.trl import import_trl

TRL = "model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: a/b\nlearning_rate: 1.0e-5\n"


def _precision(data: dict[str, Any]) -> tuple[str, str | None]:
    model = data.get("model", {})
    return model.get("dtype", "bf16"), model.get("precision")


@pytest.mark.parametrize(("keys", "expected", "warned"), [
    ("dtype: bfloat16\n", ("bf16", "autocast"), False),  # SFTConfig's bf16 default: True
    ("dtype: bfloat16\nbf16: true\n", ("bf16", "autocast"), False),
    ("dtype: bfloat16\nbf16: false\n", ("bf16", "pure"), False),
    ("bf16: true\n", ("bf16", "mixed"), False),  # ModelConfig's float32 weights
    ("dtype: float16\nbf16: false\nfp16: true\n", ("fp16", "mixed"), True),  # full
    ("dtype: float16\nbf16: false\nfp16: true\nuse_peft: true\n", ("fp16", "autocast"),
     False),  # PEFT's fp32 adapters pass the GradScaler
    ("dtype: float16\nfp16: true\nuse_peft: true\nload_in_4bit: true\n",
     ("fp16", "autocast"), False),
    ("dtype: float16\nfp16: true\nuse_peft: true\nlora_modules_to_save: [lm_head]\n",
     ("fp16", "mixed"), True),
    ("dtype: float16\nbf16: true\n", ("bf16", "autocast"), True),
])
def test_trl_precision(tmp_path: Path, keys: str, expected: tuple[str, str],
                       warned: bool) -> None:
    cfg = tmp_path / "sft.yaml"
    cfg.write_text(TRL + keys)
    imported = import_trl(cfg)
    got = _precision(imported.data)
    assert (got[0], got[1] or "mixed") == expected  # fp16's default mode is mixed
    at_dtype = [w for w in imported.warnings if w.path == ("dtype",)]
    assert bool(at_dtype) == warned, [w.summary for w in at_dtype]
    assert not [w for w in imported.warnings if "without autocast" in w.summary]


@pytest.mark.parametrize(("flags", "expected"), [
    ('"bf16": true, "peft_method": "lora"', ("bf16", "autocast")),
    ('"fp16": true, "torch_dtype": "float16", "peft_method": "lora"', ("fp16", "autocast")),
])
def test_fms_autocast_flag_over_weights_of_its_dtype_is_autocast(
        tmp_path: Path, flags: str, expected: tuple[str, str]) -> None:
    cfg = tmp_path / "fms.json"
    cfg.write_text('{"model_name_or_path": "Qwen/Qwen2.5-0.5B", "training_data_path": '
                   '"/data/rows.jsonl", "learning_rate": 1e-5, ' + flags + '}')
    imported = import_trl(cfg)
    assert _precision(imported.data) == expected
    assert not [w for w in imported.warnings if w.path in (("dtype",), ("torch_dtype",))]


AXOLOTL = ("base_model: Qwen/Qwen2.5-0.5B\nlearning_rate: 1e-5\ndatasets:\n"
           "  - path: a/b\n    type: alpaca\n")


@pytest.mark.parametrize(("keys", "expected"), [
    ("", ("bf16", "autocast")),  # bf16: auto
    ("bf16: true\n", ("bf16", "autocast")),
    ("bf16: false\n", ("fp32", None)),
])
def test_axolotl_bf16_loads_bf16_weights_under_bf16_autocast(
        tmp_path: Path, keys: str, expected: tuple[str, str | None]) -> None:
    cfg = tmp_path / "ax.yml"
    cfg.write_text(AXOLOTL + keys)
    imported = import_axolotl(cfg)
    assert _precision(imported.data) == expected
    assert not [w for w in imported.warnings if w.path in (("bf16",), ("fp16",))]


@pytest.mark.parametrize("adapter", ["lora", "qlora"])
def test_axolotl_fp16_adapter_is_fp16_autocast(tmp_path: Path, adapter: str) -> None:
    """axolotl's fp16 LoRA / QLoRA (GPUs without bf16): fp16 weights, PEFT's fp32 adapters
    under fp16 autocast, which the spec says as it is; no warning."""
    cfg = tmp_path / "ax.yml"
    cfg.write_text(AXOLOTL + f"bf16: false\nfp16: true\nadapter: {adapter}\nlora_r: 8\n"
                   "lora_alpha: 16\nlora_target_linear: true\n")
    imported = import_axolotl(cfg)
    assert _precision(imported.data) == ("fp16", "autocast")
    assert imported.data["method"]["kind"] == adapter
    assert not [w for w in imported.warnings if w.path in (("bf16",), ("fp16",))]


def test_axolotl_fp16_is_mixed_with_the_reason(tmp_path: Path) -> None:
    cfg = tmp_path / "ax.yml"
    cfg.write_text(AXOLOTL + "bf16: false\nfp16: true\n")
    imported = import_axolotl(cfg)
    assert _precision(imported.data) == ("fp16", None)  # fp16's default: mixed
    (w,) = [w for w in imported.warnings if w.path == ("fp16",)]
    assert "GradScaler" in w.summary and w.span is not None and w.span.line == 7


LLAMAFACTORY = ("model_name_or_path: Qwen/Qwen2.5-0.5B\nstage: sft\ndo_train: true\n"
                "dataset: alpaca_en_demo\nlearning_rate: 1.0e-4\n")


@pytest.mark.parametrize(("keys", "expected"), [
    ("finetuning_type: lora\nbf16: true\n", ("bf16", "autocast")),
    ("finetuning_type: full\nbf16: true\n", ("bf16", "mixed")),
    ("finetuning_type: full\npure_bf16: true\n", ("bf16", "pure")),
    ("finetuning_type: lora\nfp16: true\n", ("fp16", "autocast")),
    ("fp16: true\n", ("fp16", "autocast")),  # finetuning_type's default: lora
    ("finetuning_type: full\nfp16: true\n", ("fp16", None)),  # fp16's default: mixed
    ("finetuning_type: lora\nfp16: true\nadditional_target: lm_head\n", ("fp16", None)),
])
def test_llamafactory_precision(tmp_path: Path, keys: str,
                                expected: tuple[str, str | None]) -> None:
    cfg = tmp_path / "lf.yaml"
    cfg.write_text(LLAMAFACTORY + keys)
    imported = import_llamafactory(cfg)
    assert _precision(imported.data) == expected
    warned = [w for w in imported.warnings if w.path == ("fp16",)]
    assert bool(warned) == ("additional_target" in keys), [w.summary for w in warned]
