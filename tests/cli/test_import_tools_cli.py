"""`ftspec import axolotl|llamafactory FILE [-o SPEC]`: the spec with origins, warnings at
their source lines on stderr, exit 1 with FILE:LINE:COL for another tool's file. With
`--target T`, then `ftspec compile SPEC`: the aimed spec's changes are warnings at their source
lines, and compile lists every addition still missing in one run, each at its line with the
key to add."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.cli_run import run

CORPUS = Path(__file__).parents[1] / "importers" / "corpus"


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


def test_axolotl_writes_a_valid_spec(capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(CORPUS / "axolotl" / "llama-3-qlora-1b.yml", "qlora-1b.yml")
    code, _, err = run(capsys, "import", "axolotl", "qlora-1b.yml", "-o", "spec.yaml")
    assert code == 0, err
    text = Path("spec.yaml").read_text()
    assert "rank: 32 # from qlora-1b.yml:24" in text
    assert "bits: 4 # from qlora-1b.yml:6" in text
    assert "max_seq_len: 2048 # from qlora-1b.yml:19 (sequence_len, read as max_length)" in text
    assert "double_quant: true # axolotl 0.19.0 / transformers 5.16.1 default" in text
    assert "qlora-1b.yml:57:1: warning: loss_watchdog_threshold:" in err
    code, out, err = run(capsys, "validate", "spec.yaml")
    assert code == 0, out + err


def test_llamafactory_prints_the_spec(capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(CORPUS / "llamafactory" / "llama3_lora_sft.yaml", "llama3_lora_sft.yaml")
    code, out, err = run(capsys, "import", "llamafactory", "llama3_lora_sft.yaml")
    assert code == 0, err
    assert "alpha: 16 # LLaMA-Factory 0.9.5 / transformers 4.57.1 default " \
        "(lora_alpha: lora_rank x 2)" in out
    assert "validation_split_ratio: 0.1 # from llama3_lora_sft.yaml:36" in out
    assert "llama3_lora_sft.yaml:12:1: warning: template: template llama3:" in err


def test_another_tools_file_is_a_located_error(capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(CORPUS / "llamafactory" / "llama3_full_sft.yaml", "full.yaml")
    code, out, err = run(capsys, "import", "axolotl", "full.yaml")
    assert code == 1 and out == ""
    assert err.startswith("full.yaml:2:1: error: model_name_or_path: not an axolotl config")
    shutil.copy(CORPUS / "axolotl" / "mistral-qlora.yml", "mistral.yml")
    code, out, err = run(capsys, "import", "llamafactory", "mistral.yml")
    assert code == 1 and out == ""
    assert err.startswith("mistral.yml:1:1: error: base_model: not a LLaMA-Factory train config")


def test_overrides_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(CORPUS / "axolotl" / "llama-3-lora-1b.yml", "lora.yml")
    code, _, err = run(capsys, "import", "axolotl", "lora.yml", "lora_r=8")
    assert code == 1
    assert "takes no KEY=VALUE arguments" in err


def test_axolotl_aimed_at_torchtune_compiles(capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(CORPUS / "axolotl" / "llama-3-lora-1b.yml", "lora.yml")
    code, _, err = run(capsys, "import", "axolotl", "lora.yml", "--target", "torchtune",
                       "-o", "spec.yaml")
    assert code == 0, err
    assert "lora.yml:1:1: warning: launcher: aimed at torchtune: launcher: 'torchtune' " \
        "instead of 'accelerate'" in err
    assert "launcher: torchtune # --target torchtune; was 'accelerate'" in \
        Path("spec.yaml").read_text()
    code, out, err = run(capsys, "compile", "spec.yaml", "-o", "out")
    assert code == 0, out + err
    assert Path("out/config.yaml").is_file() and Path("out/command.sh").is_file()


def test_trl_aimed_at_kubeflow_lists_every_addition(capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(CORPUS / "trl" / "handbook-2025-smollm2-sft.yaml", "sft.yaml")
    code, _, err = run(capsys, "import", "trl", "sft.yaml", "--target", "kubeflow",
                       "-o", "spec.yaml")
    assert code == 0, err
    assert "aimed at kubeflow: deploy.kubeflow.generate_runtime: True" in err
    assert "warning: aimed at kubeflow, the spec still needs 3 additions" in err
    code, _, err = run(capsys, "compile", "spec.yaml", "--target", "kubeflow")
    assert code == 1
    lines = Path("spec.yaml").read_text().splitlines()
    errors = [e for e in err.splitlines() if ": error: " in e]
    assert len(errors) == 3, err
    for e in errors:  # each at the line of its key in the spec
        line = int(e.split(":")[1])
        assert 1 <= line <= len(lines)
    assert "hint: add deploy.scheduling.image: an image with accelerate, transformers, TRL" in err
    assert "hint: set output.uri: pvc://CLAIM/PATH" in err
    assert "hint: add secrets: {wandb_api_key: {secretRef: {name: SECRET, key: KEY}}}" in err


def test_unknown_target_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(CORPUS / "axolotl" / "llama-3-lora-1b.yml", "lora.yml")
    code, _, err = run(capsys, "import", "axolotl", "lora.yml", "--target", "slurm")
    assert code != 0 and "slurm" in err


def test_target_with_live_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "import", "trainjob", "--live", "ml/job", "--target",
                       "torchtune", "-o", "spec.yaml")
    assert code != 0 and "--target aims a FILE import" in err
    assert not Path("spec.yaml").exists()
