"""`ftspec import oumi`: origins, Oumi's defaults, overrides, job config, mixtures, warnings
and wrong-file errors, through the real command line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.cli_run import run
from ruamel.yaml import YAML

CORPUS = Path(__file__).parents[1] / "importers" / "corpus" / "oumi"


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    for name in ("qwen3-14b_lora-train.yaml", "jobs/qwen3-14b_lora-gcp_job.yaml"):
        shutil.copy(CORPUS / name, tmp_path / Path(name).name)
    return tmp_path


def test_import_with_overrides_and_job(capsys: pytest.CaptureFixture[str], here: Path) -> None:
    code, _, err = run(capsys, "import", "oumi", "qwen3-14b_lora-train.yaml",
                       "training.learning_rate=1e-4", "peft.lora_dropout=0.1",
                       "--job", "qwen3-14b_lora-gcp_job.yaml", "-o", "spec.yaml")
    assert code == 0, err
    text = Path("spec.yaml").read_text()
    assert "learning_rate: 0.0001 # from the argument training.learning_rate=1e-4" in text
    assert "dropout: 0.1 # from the argument peft.lora_dropout=0.1" in text
    assert "rank: 16 # from qwen3-14b_lora-train.yaml:61" in text
    assert "family: qwen3-14b # from qwen3-14b_lora-train.yaml:18 (catalog)" in text
    assert "logging:\n    strategy: steps # Oumi 0.9 default (training.logging_strategy)" in text
    assert "name: qwen3-14b-lora # from qwen3-14b_lora-gcp_job.yaml:16" in text
    assert "gpus_per_node: 4 # from qwen3-14b_lora-gcp_job.yaml:20" in text
    assert "accelerator: nvidia-a100-40gb # from qwen3-14b_lora-gcp_job.yaml:20" in text
    # 2 per device x 8 accumulation x 4 GPUs of the job config
    assert "global_batch_size: 64 # per_device_train_batch_size x gradient_accumula" in text
    assert "sharding: full_shard # from qwen3-14b_lora-train.yaml:71" in text
    # What the spec cannot say: a warning at its line, in the file it is in.
    [note] = [line for line in err.splitlines() if ": note: " in line]  # one, after them
    assert note.startswith("qwen3-14b_lora-train.yaml:") and \
        ": note: no effect on training, not imported: " in note
    assert "training.empty_device_cache_steps (line 55)" in note
    assert "warning: training.empty_device_cache_steps" not in err
    assert "qwen3-14b_lora-gcp_job.yaml:21:3: warning: resources.use_spot" in err
    assert "qwen3-14b_lora-gcp_job.yaml:40:1: warning: run:" in err
    code, out, err = run(capsys, "validate", "spec.yaml")
    assert code == 0, out + err


def test_mixture_validation_and_defaults(capsys: pytest.CaptureFixture[str], here: Path) -> None:
    Path("mix.yaml").write_text(
        "model:\n  model_name: HuggingFaceTB/SmolLM2-135M-Instruct\n"
        "  torch_dtype_str: float32\n"
        "data:\n  train:\n    datasets:\n"
        "      - dataset_name: yahma/alpaca-cleaned\n        mixture_proportion: 0.7\n"
        "      - dataset_name: tatsu-lab/alpaca\n        split: train\n"
        "        mixture_proportion: 0.3\n"
        "    mixture_strategy: all_exhausted\n"
        "  validation:\n    datasets:\n"
        "      - dataset_name: HuggingFaceH4/ultrachat_200k\n        split: test_sft\n"
        "training:\n  trainer_type: TRL_SFT\n  mixed_precision_dtype: BF16\n"
        "  eval_strategy: steps\n  eval_steps: 25\n  warmup_ratio: 0.1\n"
        "  max_steps: 100\n  flux_capacitor: 3\n")
    code, _, err = run(capsys, "import", "oumi", "mix.yaml", "-o", "spec.yaml")
    assert code == 0, err
    spec = YAML(typ="safe").load(Path("spec.yaml").read_text())
    mixture = spec["data"]["mixture"]
    assert mixture["strategy"] == "all_exhausted"
    assert [(d["uri"], d["proportion"], d["split"]) for d in mixture["datasets"]] == [
        ("hf://yahma/alpaca-cleaned", 0.7, "train"),
        ("hf://tatsu-lab/alpaca", 0.3, "train")]
    # (chat cannot be mixed with Alpaca rows on the accelerate launcher: validate refuses it)
    assert [d["format"] for d in mixture["datasets"]] == ["alpaca", "alpaca"]
    assert spec["data"]["validation"]["split"] == "test_sft"
    assert spec["model"]["dtype"] == "bf16"  # fp32 weights, bf16 mixed precision
    t = spec["training"]
    assert (t["max_steps"], t["epochs"], t["evaluation"]["steps"]) == (100, None, 25)
    assert t["scheduler"] == {"name": "linear", "warmup_ratio": 0.1}  # Oumi's default schedule
    assert (t["learning_rate"], t["micro_batch_size"], t["logging"]["steps"]) == (5e-5, 8, 50)
    assert t["logging"]["report_to"] == ["tensorboard"]  # Oumi reports to TensorBoard unless told
    assert spec["method"] == {"kind": "full"}
    assert "mix.yaml:24:3: warning: training.flux_capacitor: 3 has no spec field" in err
    code, out, err = run(capsys, "validate", "spec.yaml")
    assert code == 0, out + err


def test_not_an_oumi_config(capsys: pytest.CaptureFixture[str], here: Path) -> None:
    Path("tt.yaml").write_text("output_dir: /tmp/x\nmodel:\n"
                               "  _component_: torchtune.models.llama3_2.lora_llama3_2_1b\n")
    code, out, err = run(capsys, "import", "oumi", "tt.yaml")
    assert code == 1 and out == ""
    assert err.startswith("tt.yaml:2:1: error: model: not an Oumi TrainingConfig: no "
                          "model.model_name")
    code, out, err = run(capsys, "import", "oumi", "qwen3-14b_lora-gcp_job.yaml")
    assert code == 1
    assert err.startswith("qwen3-14b_lora-gcp_job.yaml:18:1: error: resources: an Oumi "
                          "JobConfig, not a TrainingConfig")
    code, out, err = run(capsys, "import", "oumi", "qwen3-14b_lora-train.yaml", "--job",
                         "qwen3-14b_lora-train.yaml")
    assert code == 1
    assert err.startswith("qwen3-14b_lora-train.yaml:17:1: error: model: not an Oumi "
                          "JobConfig")


def test_preference_trainer_is_refused(capsys: pytest.CaptureFixture[str], here: Path) -> None:
    Path("dpo.yaml").write_text("model:\n  model_name: Qwen/Qwen3-0.6B\n"
                                "data:\n  train:\n    datasets:\n"
                                "      - dataset_name: mlabonne/orpo-dpo-mix-40k\n"
                                "training:\n  trainer_type: TRL_DPO\n")
    code, _, err = run(capsys, "import", "oumi", "dpo.yaml")
    assert code == 1
    assert err.startswith("dpo.yaml:8:3: error: training.trainer_type: trainer_type TRL_DPO")
