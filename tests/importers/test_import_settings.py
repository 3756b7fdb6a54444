"""Settings with no spec field say what trains differently; DeepSpeed JSONs that can be read
give their ZeRO stage and offload instead of being refused by name (issue 24)."""

from __future__ import annotations

import json
from pathlib import Path

from ftspec.compiler.importers.axolotl import import_axolotl
from ftspec.compiler.importers.llamafactory import import_llamafactory

CORPUS = Path(__file__).parent / "corpus"


def test_loraplus_warning_says_what_trains_differently() -> None:
    imported = import_llamafactory(CORPUS / "llamafactory" /
                                   "2026-extras-loraplus-llama3_lora_sft.yaml")
    (w,) = [w for w in imported.warnings if w.path == ("loraplus_lr_ratio",)]
    assert "B matrix" in w.summary and "plain LoRA" in w.summary
    assert w.span is not None and w.span.line > 1


def test_unfrozen_parameters_warning_says_what_trains() -> None:
    imported = import_axolotl(CORPUS / "axolotl" / "2026-gemma3-gemma-3-1b-qlora.yml")
    (w,) = [w for w in imported.warnings if w.path == ("unfrozen_parameters",)]
    assert "only the parameters matching" in w.summary


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
