"""``training.stop``, prompt tuning and GPTQ-LoRA at the spec: what each launcher compiles,
and what it refuses, located at the field (``ftspec validate``'s FILE:LINE:COL)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.cli.main import main
from ftspec.compiler.pipeline import SpecInput, compile_spec
from ftspec.targets import get_target

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "examples" / "tiny-local.yaml"
GPTQ = ROOT / "examples" / "sfttrainer-gptq-lora-benchmark.yaml"


def _write(tmp: Path, data: dict[str, Any]) -> Path:
    path = tmp / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _position(path: Path, *keys: str) -> str:
    """``line:col`` of the value at ``keys`` as the YAML file lays it out (yaml.compose)."""
    node = yaml.compose(path.read_text())
    for key in keys:
        node = next(v for k, v in node.value if k.value == key)
    return f"{node.start_mark.line + 1}:{node.start_mark.column + 1}"


def _validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["validate", str(path)])
    out = capsys.readouterr()
    return code, out.out + out.err


def _tiny(**changes: Any) -> dict[str, Any]:
    d: dict[str, Any] = yaml.safe_load(TINY.read_text())
    for key, value in changes.items():
        d[key] = {**d[key], **value} if isinstance(value, dict) else value
    return d


def test_torchtune_refuses_a_stop_rule_at_its_field(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _tiny(training={"stop": {"after_seconds": 30}}))
    code, out = _validate(path, capsys)
    at = _position(path, "training", "stop", "after_seconds")
    assert code == 1
    assert f"{path}:{at}: error: training.stop.after_seconds: torchtune 0.6.1's recipes " \
           "have no callback" in out, out
    assert "use launcher: accelerate" in out


def test_torchtune_refuses_prompt_tuning_at_method_kind(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _tiny(method={"kind": "prompt_tuning", "lora": None}))
    data = yaml.safe_load(path.read_text())
    data["method"] = {"kind": "prompt_tuning", "prompt_tuning": {"num_virtual_tokens": 8}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out = _validate(path, capsys)
    at = _position(path, "method", "kind")
    assert code == 1
    assert f"{path}:{at}: error: method.kind: torchtune has no recipe for prompt_tuning" in out


def test_a_named_method_and_its_numbers_are_refused_together(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stop = {"method": "WARMUP_60S_STABLE_120S_OR_10_STEPS", "warmup_seconds": 5}
    path = _write(tmp_path, _tiny(launcher="accelerate", training={"stop": stop}))
    code, out = _validate(path, capsys)
    at = _position(path, "training", "stop", "warmup_seconds")
    assert code == 1 and f"{path}:{at}: error: training.stop.warmup_seconds: " in out


def test_accelerate_hands_the_stop_rule_to_its_entrypoint(tmp_path: Path) -> None:
    stop = {"after_seconds": 900, "method": "WARMUP_60S_STABLE_120S_OR_10_STEPS"}
    data = _tiny(launcher="accelerate", training={"stop": stop})
    data["method"]["lora"]["output"] = False
    result = compile_spec(SpecInput(_write(tmp_path, data), (), ()), "accelerate")
    assert result.ok and result.job is not None, [d.format() for d in result.diagnostics]
    files = {a.path: a.content for a in get_target("accelerate").compile(result.job)}
    assert "-m ftspec.runtime.hf_sft" in files["command.sh"]  # not `trl sft`
    assert json.loads(files["prepare.json"])["stop"] == {
        "after_seconds": 900.0, "warmup_seconds": 60.0, "stable_seconds": 120.0,
        "stable_steps": 10}


def test_gptq_lora_is_refused_on_cpu_at_method_kind(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load(GPTQ.read_text())
    data["resources"] = {"gpus_per_node": 0}
    data["distributed"] = {"strategy": "none"}
    data["model"].pop("attn_implementation")  # flash attention is refused on CPU as well
    data["deploy"] = {"target": "local"}
    data["metadata"].pop("namespace")
    data["metadata"].pop("labels")
    data["training"]["global_batch_size"] = 8
    path = _write(tmp_path, data)
    code, out = _validate(path, capsys)
    at = _position(path, "method", "kind")
    assert code == 1
    assert f"{path}:{at}: error: method.kind: GPTQ-LoRA trains through GPTQ kernels that " \
           "need a CUDA GPU" in out, out
    assert len(re.findall(r": error: ", out)) == 1, out  # the one reason, nothing else


SEED_GPTQ_COMMAND = """
accelerate launch --config_file ${PATH_ACCELERATE_CONFIG} --num_processes ${NUMBER_GPUS} \
  ${PATH_TO_OUR_WRAPPER_OF_FMS_HF_TUNING_SFT_TRAINER} --model_name_or_path ${MODEL} \
  --torch_dtype float16 --use_flash_attn True --training_data_path ${DATASET_PATH} \
  --response_template "\\n### Response:" --dataset_text_field output --log_level debug \
  --num_train_epochs 1 --per_device_train_batch_size ${BATCH_SIZE/NUM_GPUS} \
  --max_seq_length ${MODEL_MAX_LENGTH} --eval_strategy no --output_dir ${RANDOM_DIR} \
  --gradient_accumulation_steps ${GRADIENT_ACCUMULATION_STEPS} --save_strategy no \
  --learning_rate 1e-05 --weight_decay 0.0 --warmup_ratio 0.03 --lr_scheduler_type cosine \
  --logging_steps 1 --include_tokens_per_second True --gradient_checkpointing True \
  --packing False --peft_method lora --target_modules ${SPACE SEPARATED LAYER NAMES} \
  --fp16 true --fast_kernels true true true --fused_lora auto_gptq true --auto_gptq triton_v2 \
  --optim ${OPTIM} --bf16 ${BF16} \
  --gradient_checkpointing_kwargs='{"use_reentrant": ${GRADIENT_CHECKPOINTING_USE_REENTRANT}}' \
  --fast_moe ${FAST_MOE}
"""
"""The seed's GPTQ-LoRA command line (finetune_gtpq-lora_benchmark-v1.0.0), verbatim."""

FILLED = {  # the example's entity-space point: 2 GPUs, batch_size 4 (2 per GPU), mistral-7b-v0.1
    "${BATCH_SIZE/NUM_GPUS}": "2", "${MODEL_MAX_LENGTH}": "4096",
    "${GRADIENT_ACCUMULATION_STEPS}": "4", "${SPACE SEPARATED LAYER NAMES}": "q_proj v_proj",
    "${OPTIM}": "adamw_torch", "${BF16}": "False",
}
TRAINER_FLAGS = {  # fms-hf-tuning flag -> TRL sft.yaml key (the same TrainingArguments field)
    "torch_dtype": "dtype", "num_train_epochs": "num_train_epochs",
    "per_device_train_batch_size": "per_device_train_batch_size",
    "max_seq_length": "max_length", "gradient_accumulation_steps": "gradient_accumulation_steps",
    "save_strategy": "save_strategy", "learning_rate": "learning_rate",
    "weight_decay": "weight_decay", "lr_scheduler_type": "lr_scheduler_type",
    "logging_steps": "logging_steps", "packing": "packing", "fp16": "fp16", "bf16": "bf16",
    "optim": "optim",
    "target_modules": "lora_target_modules",
}
NOT_TRL = {
    "fast_kernels": "fms-acceleration's fused loss / RMSNorm / RoPE kernels: a plugin of "
                    "fms-hf-tuning that TRL does not load",
    "fused_lora": "fms-acceleration's fused LoRA over GPTQ kernels (fms-hf-tuning plugin)",
    "auto_gptq": "fms-acceleration's GPTQ kernel choice (triton_v2); under TRL transformers' "
                 "GPTQ integration picks the gptqmodel kernel",
}
"""Flags with no TRL counterpart, and why (the fms-hf-tuning launcher can carry them)."""


def _seed_flags() -> dict[str, list[str]]:
    text = SEED_GPTQ_COMMAND
    for key, value in FILLED.items():
        text = text.replace(key, value)
    words = shlex.split(text.replace("\\\n", " "))
    flags: dict[str, list[str]] = {}
    name = None
    for word in words:
        if word.startswith("--"):
            name, _, inline = word[2:].partition("=")
            flags[name] = [inline] if inline else []
        elif name is not None:
            flags[name].append(word)
    return flags


def _same(seed: list[str], ours: Any) -> bool:
    if isinstance(ours, bool):
        return seed == [str(ours).lower()] or seed == [str(ours)]
    if isinstance(ours, list):
        return seed == [str(v) for v in ours]
    if isinstance(ours, float):
        return float(seed[0]) == ours
    return seed == [str(ours)]


def test_gptq_lora_compiles_the_seeds_trainer_settings() -> None:
    result = compile_spec(SpecInput(GPTQ, (), ()), "accelerate")
    assert result.ok and result.job is not None, [d.format() for d in result.diagnostics]
    files = {a.path: a.content for a in get_target("accelerate").compile(result.job)}
    sft = yaml.safe_load(files["sft.yaml"])
    seed = _seed_flags()
    seed["torch_dtype"] = ["float16"]
    for flag, key in TRAINER_FLAGS.items():
        assert _same(seed[flag], sft[key]), f"--{flag} {seed[flag]} vs {key}: {sft[key]}"
    # the rows' text column: prepare.json's (the stop rule runs ftspec's entrypoint)
    train = json.loads(files["prepare.json"])["train"][0]
    assert train["text_field"] == seed["dataset_text_field"][0] == "output"
    # completions only, after the seed's marker (TRL's default masks the split rows' prompt)
    assert train["response_template"] == seed["response_template"][0].replace("\\n", "\n")
    assert sft.get("completion_only_loss") is not False
    # LoRA through TRL's ModelConfig; the seed's r / lora_alpha defaults
    assert (sft["use_peft"], sft["lora_r"], sft["lora_alpha"]) == (True, 4, 16.0)
    # the seed's warmup_ratio 0.03: transformers reads a warmup_steps below 1 as a ratio
    assert seed["warmup_ratio"] == ["0.03"] and sft["warmup_steps"] == 0.03
    # checkpointing: the seed's trainer flag, done by accelerate's FSDP here (compared with
    # the accelerate config in test_sfttrainer_seed_configs.py)
    assert seed["gradient_checkpointing"] == ["True"] and sft["gradient_checkpointing"] is False
    assert "fsdp_activation_checkpointing: true" in files["accelerate.yaml"]
    assert set(NOT_TRL) <= set(seed)
    assert not set(NOT_TRL) & set(sft)
