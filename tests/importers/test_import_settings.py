"""Settings with no spec field say what trains differently; DeepSpeed JSONs that can be read
give their ZeRO stage and offload instead of being refused by name (issue 24)."""

from __future__ import annotations

import json
from pathlib import Path

from ftspec.compiler.importers.axolotl import import_axolotl
from ftspec.compiler.importers.llamafactory import import_llamafactory

CORPUS = Path(__file__).parent / "corpus"


def test_loraplus_is_imported_as_the_spec_field() -> None:
    imported = import_llamafactory(CORPUS / "llamafactory" /
                                   "2026-extras-loraplus-llama3_lora_sft.yaml")
    assert imported.data["method"]["lora"]["loraplus_lr_ratio"] == 16.0
    assert not [w for w in imported.warnings if w.path and w.path[0].startswith("loraplus")]


def test_axolotl_loraplus_without_weight_decay_warns_when_the_spec_decays(
        tmp_path: Path) -> None:
    cfg = tmp_path / "ax.yml"
    cfg.write_text("base_model: Qwen/Qwen2.5-0.5B\nlearning_rate: 1e-5\ndatasets:\n"
                   "  - path: a/b\n    type: alpaca\nadapter: lora\nlora_r: 8\n"
                   "lora_alpha: 16\nloraplus_lr_ratio: 16\nloraplus_lr_embedding: 1e-5\n"
                   "weight_decay: 0.1\n")
    imported = import_axolotl(cfg)
    lora = imported.data["method"]["lora"]
    assert (lora["loraplus_lr_ratio"], lora["loraplus_lr_embedding"]) == (16.0, 1e-5)
    (w,) = [w for w in imported.warnings if w.path == ("loraplus_lr_ratio",)]
    assert "no weight decay" in w.summary and w.span is not None and w.span.line == 9


def test_unfrozen_parameters_become_the_spec_patterns() -> None:
    imported = import_axolotl(CORPUS / "axolotl" / "2026-gemma3-gemma-3-1b-qlora.yml")
    assert imported.data["method"]["unfrozen_parameters"] == [
        r"^model\.language_model\.*", r"^lm_head\.*"]
    (w,) = [w for w in imported.warnings if w.path == ("unfrozen_parameters",)]
    assert "PEFT's parameter names" in w.summary  # the patterns name the unwrapped model


def test_unfrozen_row_ranges_are_warned(tmp_path: Path) -> None:
    cfg = tmp_path / "ax.yml"
    cfg.write_text("base_model: Qwen/Qwen2.5-0.5B\nlearning_rate: 1e-5\ndatasets:\n"
                   "  - path: a/b\n    type: alpaca\nunfrozen_parameters:\n"
                   "  - ^model.embed_tokens.weight$[:32000]\n  - layers.2[0-9]+.mlp\n")
    imported = import_axolotl(cfg)
    assert imported.data["method"]["unfrozen_parameters"] == [
        r"^model\.embed_tokens\.weight$", r"layers\.2[0-9]+\.mlp"]
    (w,) = [w for w in imported.warnings if w.path == ("unfrozen_parameters", 0)]
    assert "[:32000]" in w.summary and w.span is not None and w.span.line == 7


def test_eight_bit_bases_are_qlora_int8(tmp_path: Path) -> None:
    imported = import_axolotl(CORPUS / "axolotl" / "2026-phi-lora-3.5.yaml")
    assert imported.data["method"]["kind"] == "qlora"
    assert imported.data["method"]["quantization"] == {"bits": 8, "quant_type": "int8"}
    cfg = tmp_path / "lf.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\nstage: sft\n"
                   "do_train: true\nfinetuning_type: lora\nquantization_bit: 8\n"
                   "dataset: identity\noutput_dir: out\n")
    imported = import_llamafactory(cfg)
    assert imported.data["method"]["quantization"] == {"bits": 8, "quant_type": "int8"}


def test_llamafactory_freeze_tuning_is_full_with_unfrozen_layers(tmp_path: Path) -> None:
    cfg = tmp_path / "lf.yaml"
    cfg.write_text("model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\nstage: sft\n"
                   "do_train: true\nfinetuning_type: freeze\nfreeze_trainable_layers: 3\n"
                   "freeze_extra_modules: embed_tokens\ndataset: identity\noutput_dir: out\n")
    imported = import_llamafactory(cfg)
    assert imported.data["method"]["kind"] == "full"
    assert imported.data["method"]["unfrozen_parameters"] == [
        r".*\.(29|30|31)\.", ".*embed_tokens"]
    assert not [w for w in imported.warnings if w.path and w.path[0].startswith("freeze")]


def test_deepspeed_json_beside_the_config_is_read(tmp_path: Path) -> None:
    (tmp_path / "my_zero3.json").write_text(json.dumps({
        "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                              "offload_param": {"device": "cpu"}, "overlap_comm": True,
                              "reduce_bucket_size": "auto"},
        "bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": "auto",
        "gradient_clipping": 0.5}))
    cfg = tmp_path / "ax.yml"
    cfg.write_text("base_model: Qwen/Qwen2.5-0.5B\nlearning_rate: 1e-5\ndatasets:\n"
                   "  - path: a/b\n    type: alpaca\ndeepspeed: my_zero3.json\n")
    imported = import_axolotl(cfg)
    ds = imported.data["distributed"]
    assert ds["strategy"] == "deepspeed"
    assert ds["deepspeed"] == {"stage": 3, "offload_optimizer": "cpu", "offload_params": "cpu"}
    (w,) = [w for w in imported.warnings if w.path == ("deepspeed",)
            and "not imported" in w.summary]
    assert "gradient_clipping" in w.summary and "zero_optimization.overlap_comm" in w.summary
    assert "bf16" not in w.summary  # all "auto": the spec's own precision applies


def test_unreadable_deepspeed_file_outside_the_shipped_set_is_a_warning(
        tmp_path: Path) -> None:
    cfg = tmp_path / "ax.yml"
    cfg.write_text("base_model: Qwen/Qwen2.5-0.5B\nlearning_rate: 1e-5\ndatasets:\n"
                   "  - path: a/b\n    type: alpaca\ndeepspeed: somewhere/else.json\n")
    imported = import_axolotl(cfg)
    assert "distributed" not in imported.data or \
        imported.data["distributed"].get("strategy") != "deepspeed"
    assert [w for w in imported.warnings if w.path == ("deepspeed",)
            and "not readable here" in w.summary]


def test_mask_history_says_which_turns_train(tmp_path: Path) -> None:
    cfg = tmp_path / "lf.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\nstage: sft\n"
                   "do_train: true\nfinetuning_type: lora\ndataset: identity\n"
                   "template: qwen\nmask_history: true\noutput_dir: out\n")
    imported = import_llamafactory(cfg)
    (w,) = [w for w in imported.warnings if w.path == ("mask_history",)]
    assert "only the last assistant turn" in w.summary
    assert w.span is not None and w.span.line == 7


def test_oumi_datasets_without_proportions_are_concatenated(tmp_path: Path) -> None:
    from ftspec.compiler.importers.oumi import import_oumi

    cfg = tmp_path / "train.yaml"
    cfg.write_text("model:\n  model_name: HuggingFaceTB/SmolLM2-135M-Instruct\n"
                   "data:\n  train:\n    datasets:\n"
                   "      - dataset_name: yahma/alpaca-cleaned\n"
                   "      - dataset_name: tatsu-lab/alpaca\n"
                   "training:\n  output_dir: out\n")
    imported = import_oumi(cfg)
    mixture = imported.data["data"]["mixture"]
    assert mixture["strategy"] == "concatenate"
    assert [m["uri"] for m in mixture["datasets"]] == ["hf://yahma/alpaca-cleaned",
                                                       "hf://tatsu-lab/alpaca"]
    assert all("proportion" not in m for m in mixture["datasets"])
    assert not [w for w in imported.warnings if "concatenat" in w.summary]
