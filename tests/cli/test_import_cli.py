"""`ftspec import torchtune`: origins, tool defaults, overrides, warnings, wrong-tool errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.targets.torchtune_configs import configs_dir, torchtune_installed
from helpers.cli_run import run

pytestmark = pytest.mark.skipif(not torchtune_installed(), reason="torchtune not installed")


@pytest.fixture()
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    dest = tmp_path / "1B_lora_single_device.yaml"
    dest.write_text((configs_dir() / "llama3_2/1B_lora_single_device.yaml").read_text())
    return dest


@pytest.mark.slow
def test_import_writes_a_valid_spec_with_origins(capsys: pytest.CaptureFixture[str],
                                                 config: Path) -> None:
    code, _, err = run(capsys, "import", "torchtune", config.name, "batch_size=2",
                       "optimizer.lr=1e-4", "-o", "spec.yaml")
    assert code == 0, err
    text = Path("spec.yaml").read_text()
    assert "micro_batch_size: 2 # from the argument batch_size=2" in text
    assert "learning_rate: 0.0001 # from the argument optimizer.lr=1e-4" in text
    assert "rank: 64 # from 1B_lora_single_device.yaml:25" in text
    assert "betas: [0.9, 0.999] # torchtune 0.6.1 default (torch.optim.AdamW betas)" in text
    assert "global_batch_size: 16 # batch_size x gradient_accumulation_steps x 1" in text
    # tokenizer.max_seq_len: null is the spec's own "no truncation" now
    assert "max_seq_len: null # from 1B_lora_single_device.yaml:33" in text, text
    # Each thing the spec cannot say is a warning at its source line.
    assert "1B_lora_single_device.yaml:48:1: warning: dataset: no spec field gives" in err
    code, out, err = run(capsys, "validate", "spec.yaml")
    assert code == 0, out + err


def test_removed_key_is_a_warning_not_a_silent_drop(capsys: pytest.CaptureFixture[str],
                                                   config: Path) -> None:
    code, _, err = run(capsys, "import", "torchtune", config.name, "~profiler")
    assert code == 0
    assert "warning: profiler is not in the source" in err


def test_not_a_torchtune_config(capsys: pytest.CaptureFixture[str], config: Path) -> None:
    other = Path("spec.yaml")
    other.write_text("apiVersion: ftspec.dev/v1alpha1\nkind: FineTune\nmodel:\n"
                     "  uri: hf://x/y\n")
    code, out, err = run(capsys, "import", "torchtune", str(other))
    assert code == 1 and out == ""
    assert err.startswith("spec.yaml:3:1: error: model._component_: not a torchtune "
                          "recipe config")


def test_model_outside_the_catalog(capsys: pytest.CaptureFixture[str], config: Path) -> None:
    text = config.read_text().replace("lora_llama3_2_1b", "lora_llama3_2_999b")
    config.write_text(text)
    code, _, err = run(capsys, "import", "torchtune", config.name)
    assert code == 1
    assert "1B_lora_single_device.yaml:22:3: error: model._component_: model builder " in err
