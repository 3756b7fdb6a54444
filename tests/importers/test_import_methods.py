"""Every method an importer reads is a spec method or a refusal at its source line, and a
pre-quantized checkpoint is imported as what it is (``method.quantization``, which the
memory estimate prices) or refused at the model line. Corpus configs from
``tests/importers/corpus`` (sources in each SOURCES file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.compiler.importers.axolotl import import_axolotl
from ftspec.compiler.importers.llamafactory import import_llamafactory
from ftspec.compiler.importers.oumi import import_oumi
from ftspec.compiler.importers.prequantized import prequantized
from ftspec.compiler.importers.trl import import_trl
from ftspec.compiler.memory import base_weight_bytes
from ftspec.spec.diagnostics import SpecError
from ftspec.spec.loader import parse_yaml
from ftspec.spec.validate import validate_doc

LF = Path(__file__).parent / "corpus" / "llamafactory"


def _refusal(call: object, path: Path) -> tuple[int, int, str]:
    with pytest.raises(SpecError) as info:
        call(path)  # type: ignore[operator]
    (diag,) = info.value.diagnostics
    assert diag.span is not None and diag.span.file == str(path)
    return diag.span.line, diag.span.col, diag.summary


def test_llamafactory_oft_is_refused_at_its_line() -> None:
    line, col, summary = _refusal(import_llamafactory, LF / "refused" / "llama3_oft_sft.yaml")
    assert (line, col) == (8, 1)
    assert summary.startswith("OFT (orthogonal fine-tuning) is not supported")


def test_llamafactory_awq_checkpoint_is_refused_at_the_model() -> None:
    line, col, summary = _refusal(import_llamafactory,
                                  LF / "refused" / "llama3_lora_sft_awq.yaml")
    assert (line, col) == (2, 1)
    assert "pre-quantized checkpoint (AWQ, 4-bit" in summary


def test_llamafactory_lora_on_gptq_is_gptq_lora_priced_at_4_bits() -> None:
    imported = import_llamafactory(LF / "2026-train_qlora-llama3_lora_sft_gptq.yaml")
    method = imported.data["method"]
    assert method["kind"] == "gptq_lora"
    assert method["quantization"] == {"bits": 4, "quant_type": "gptq"}
    doc = parse_yaml(imported.text, "gptq.ftspec.yaml")
    validated = validate_doc(doc)
    assert validated.ok, [d.format() for d in validated.diagnostics.items]
    assert validated.spec is not None
    bf16 = validated.spec.model_copy(update={"method": validated.spec.method.model_copy(
        update={"kind": "lora", "quantization": None})})
    assert base_weight_bytes(validated.spec) == pytest.approx(0.52)  # 4 bits + constants
    assert base_weight_bytes(bf16) == 2.0


def test_quantization_keys_on_a_prequantized_base_are_warned(tmp_path: Path) -> None:
    cfg = tmp_path / "lf.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8\nstage: sft\n"
                   "finetuning_type: lora\nquantization_bit: 4\ndataset: alpaca_en_demo\n")
    imported = import_llamafactory(cfg)
    assert imported.data["method"]["quantization"] == {"bits": 8, "quant_type": "gptq"}
    [warning] = [w for w in imported.warnings if w.path == ("quantization_bit",)]
    assert "checkpoint's own quantization is used" in warning.summary


def test_full_fine_tuning_of_a_prequantized_base_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "trl.yaml"
    cfg.write_text("model_name_or_path: unsloth/llama-3-8b-bnb-4bit\n"
                   "dataset_name: trl-lib/Capybara\nlearning_rate: 2.0e-5\n")
    line, col, summary = _refusal(import_trl, cfg)
    assert (line, col) == (1, 1) and "full fine-tuning cannot train it" in summary


def test_trl_lora_on_a_bnb_checkpoint_is_qlora(tmp_path: Path) -> None:
    cfg = tmp_path / "trl.yaml"
    cfg.write_text("model_name_or_path: unsloth/llama-3-8b-bnb-4bit\n"
                   "dataset_name: trl-lib/Capybara\nuse_peft: true\n")
    method = import_trl(cfg).data["method"]
    assert method["kind"] == "qlora" and method["quantization"]["bits"] == 4


def test_axolotl_gptq_key_and_unknown_adapter(tmp_path: Path) -> None:
    cfg = tmp_path / "gptq.yml"
    cfg.write_text("base_model: TheBloke/Llama-2-7B-GPTQ\ngptq: true\nadapter: lora\n"
                   "learning_rate: 1e-4\nlora_r: 8\nlora_alpha: 16\ndatasets:\n  - path: a/b\n    type: alpaca\n")
    assert import_axolotl(cfg).data["method"]["kind"] == "gptq_lora"
    other = tmp_path / "adapter.yml"
    other.write_text("base_model: meta-llama/Llama-3.1-8B\nadapter: llama-adapter\n"
                     "learning_rate: 1e-4\n"
                     "datasets:\n  - path: a/b\n    type: alpaca\n")
    line, col, summary = _refusal(import_axolotl, other)
    assert (line, col) == (2, 1) and summary.startswith("adapter llama-adapter is not")


def test_oumi_lora_on_awq_is_refused_at_model_name(tmp_path: Path) -> None:
    cfg = tmp_path / "oumi.yaml"
    cfg.write_text("model:\n  model_name: Qwen/Qwen2.5-7B-Instruct-AWQ\n"
                   "data:\n  train:\n    datasets:\n      - dataset_name: yahma/alpaca-cleaned\n"
                   "training:\n  use_peft: true\n  trainer_type: TRL_SFT\n")
    line, col, _ = _refusal(import_oumi, cfg)
    assert (line, col) == (2, 3)


@pytest.mark.parametrize(("name", "found"), [
    ("TechxGenus/Meta-Llama-3-8B-Instruct-GPTQ", ("gptq", 4)),
    ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", ("gptq", 8)),
    ("unsloth/llama-3-8b-bnb-4bit", ("bnb", 4)),
    ("ISTA-DASLab/Meta-Llama-3-8B-Instruct-AQLM-2Bit-1x16", ("aqlm", 2)),
    ("meta-llama/Llama-3.1-8B", None),
])
def test_prequantized_names(name: str, found: tuple[str, int] | None) -> None:
    got = prequantized(name)
    assert (None if got is None else (got.method, got.bits)) == found


def test_axolotl_hsdp_with_tensor_parallel_is_refused_at_its_line(tmp_path: Path) -> None:
    """HSDP x tensor parallelism on 16 processes: no spec layout, refused at the first key
    the spec cannot say (it was imported as FSDP on 8); dp_shard_size alone is FSDP over
    that many processes."""
    path = Path(__file__).parent / "corpus" / "axolotl" / "refused" / \
        "llama-3_1-8b-hsdp-tp.yaml"
    line, col, summary = _refusal(import_axolotl, path)
    assert (line, col) == (8, 1) and "on 16 processes" in summary
    shard_only = tmp_path / "shard.yaml"
    shard_only.write_text(path.read_text().replace("dp_replicate_size: 2\n", "")
                          .replace("tensor_parallel_size: 2\n", ""))
    imported = import_axolotl(shard_only)
    assert imported.data["resources"]["gpus_per_node"] == 4
    assert imported.data["distributed"]["strategy"] == "fsdp"


def test_axolotl_quantization_config_dequantized_or_refused(tmp_path: Path) -> None:
    """gpt-oss's MXFP4 checkpoint loaded with dequantize: true is the bf16 base the spec
    trains over (listed as no effect); a quantization config kept at load is refused."""
    path = Path(__file__).parent / "corpus" / "axolotl" / \
        "2026-gpt-oss-20b-sft-lora-singlegpu.yaml"
    imported = import_axolotl(path)
    assert imported.data["method"]["kind"] == "lora"
    [note] = [w for w in imported.warnings if w.code == "import.no-effect"]
    assert "model_quantization_config (line 3)" in note.summary
    kept = tmp_path / "kept.yaml"
    kept.write_text(path.read_text().replace("dequantize: true", "dequantize: false"))
    line, col, summary = _refusal(import_axolotl, kept)
    assert (line, col) == (3, 1) and summary.startswith("model_quantization_config Mxfp4")


def test_llamafactory_other_on_the_fly_quantizers_are_refused(tmp_path: Path) -> None:
    """quantization_method hqq / eetq quantizes the base another way than bitsandbytes:
    refused at the key (it was imported as a bitsandbytes base with a warning)."""
    cfg = tmp_path / "lf.yaml"
    cfg.write_text("model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\nstage: sft\n"
                   "finetuning_type: lora\nquantization_bit: 4\nquantization_method: hqq\n"
                   "dataset: alpaca_en_demo\n")
    line, col, summary = _refusal(import_llamafactory, cfg)
    assert (line, col) == (5, 1) and "hqq" in summary


def test_fms_prompt_tuning_is_the_spec_method(tmp_path: Path) -> None:
    """fms-hf-tuning's peft_method pt is PEFT prompt tuning with fms's defaults (8 virtual
    tokens initialised from its text); it was imported as full fine-tuning with a warning.
    Another peft_method is refused at its line."""
    cfg = tmp_path / "fms.json"
    body = ('{"model_name_or_path": "bigscience/bloom-560m",\n'
            '"training_data_path": "data/train.json",\n"output_dir": "out",\n'
            '"learning_rate": 0.03,\n"peft_method": "%s"}\n')
    cfg.write_text(body % "pt")
    method = import_trl(cfg).data["method"]
    assert method == {"kind": "prompt_tuning", "prompt_tuning": {
        "num_virtual_tokens": 8, "init": "text",
        "init_text": "Classify if the tweet is a complaint or not:"}}
    cfg.write_text(body % "prefix")
    line, col, summary = _refusal(import_trl, cfg)
    assert (line, col) == (5, 1) and summary.startswith("peft_method prefix is not supported")
