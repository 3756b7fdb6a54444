"""`ftspec validate`: many files, --json, --strict, overrides, --only-specs, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli_run import run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOOD = "examples/kubeflow-llama32-1b-lora-alpaca.yaml"
GOOD2 = "examples/oumi-qlora-llama31-8b.yaml"
BAD = "tests/invalid/enum-typo-launcher.yaml"
# One process on a 4-GPU spec: the fsdp strategy has nothing to distribute (a warning).
WARN_SETS = ["--set", "resources.gpus_per_node=1", "--set", "training.global_batch_size=8"]
# A full fine-tune of an 8B model with a huge micro batch: does not fit 80 GiB.
OOM_SETS = ["--set", "method.kind=full",
            "--set", "method.lora=null", "--set", "training.global_batch_size=256",
            "--set", "training.micro_batch_size=64"]


@pytest.fixture(autouse=True)
def _plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def test_many_files_in_one_call(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", GOOD, BAD, GOOD2)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"{GOOD}: valid"
    assert lines[1].startswith(f"{BAD}:18:11: error: launcher: invalid value")
    assert any(line.startswith(f"{GOOD2}: valid") for line in lines)
    assert lines[-1] == "2 of 3 files valid"


def test_all_valid_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in EXAMPLES.glob("*.yaml"))
    code, out, err = run(capsys, "validate", *files)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == f"{len(files)} of {len(files)} files valid"


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", "--json", GOOD, BAD)
    assert code == 1
    payload = json.loads(out)
    assert payload["valid"] is False
    assert [(f["file"], f["valid"], f["skipped"]) for f in payload["files"]] == [
        (GOOD, True, False), (BAD, False, False)]
    [diag] = payload["files"][1]["diagnostics"]
    assert diag == {
        "severity": "error", "code": "schema.enum",
        "summary": 'invalid value: a string "acelerate"; expected one of: torchtune, accelerate, fms_hf_tuning',
        "path": "launcher", "file": BAD, "line": 18, "col": 11,
        "hint": 'did you mean "accelerate"?', "detail": None,
    }


def test_warnings_pass_unless_strict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", GOOD, *WARN_SETS)
    assert code == 0
    assert "warning: distributed.strategy: strategy fsdp on a single process" in out
    assert out.splitlines()[-1] == f"{GOOD}: valid (1 warning)"
    code, out, _ = run(capsys, "validate", "--strict", GOOD, *WARN_SETS)
    assert code == 1
    assert "valid" not in out.splitlines()[-1]


def test_memory_fit_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", "--json", GOOD, *OOM_SETS)
    assert code == 0
    [diag] = json.loads(out)["files"][0]["diagnostics"]
    assert (diag["severity"], diag["code"], diag["path"]) == ("warning", "rule.memory-fit",
                                                             "resources")
    assert (diag["file"], diag["line"], diag["col"]) == (GOOD, 53, 1)
    assert "exceeds the 80 GiB of nvidia-a100-80gb" in diag["summary"]
    assert "micro_batch_size" in diag["hint"] and "lora" in diag["hint"]
    code, _, _ = run(capsys, "validate", "--strict", GOOD, *OOM_SETS)
    assert code == 1


def test_examples_have_no_memory_warning(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in EXAMPLES.glob("*.yaml"))
    code, out, _ = run(capsys, "validate", "--json", *files)
    assert code == 0, out
    codes = [d["code"] for f in json.loads(out)["files"] for d in f["diagnostics"]]
    assert "rule.memory-fit" not in codes


def test_set_and_values_overlay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    overlay = tmp_path / "prod.yaml"
    overlay.write_text("resources:\n  accelerator: nvidia-t4\n")
    code, out, _ = run(capsys, "validate", GOOD, "-f", str(overlay))
    assert code == 1
    assert out.startswith(f"{GOOD}:19:10: error: model.dtype: bf16 needs an Ampere")
    # the launcher's own check (torchtune has no fp16 recipe), placed at the flag
    code, out, _ = run(capsys, "validate", GOOD, "-f", str(overlay), "--set", "model.dtype=fp16")
    assert code == 1
    assert out.startswith("--set[0]:1:13: error: model.dtype: torchtune's recipes do not train "
                          "in fp16")
    code, out, _ = run(capsys, "validate", GOOD, "-f", str(overlay), "--set", "model.dtype=fp32")
    # valid; the T4's 15 GiB is short of torchtune's cross-entropy over 4 x 2048 tokens x
    # 128256 logits (12 bytes each at its backward): a warning, not an error
    assert code == 0
    assert out.endswith(f"{GOOD}: valid (1 warning)\n")
    assert "warning: resources: estimated peak memory" in out
    code, out, _ = run(capsys, "validate", GOOD, "--set", "training.learning_rate=2")
    assert out.startswith("--set[0]:1:24: error: training.learning_rate: must be < 1")


def test_only_specs_skips_other_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ci = tmp_path / "ci.yaml"
    ci.write_text("on: push\njobs: {}\n")
    overlay = tmp_path / "prod.yaml"
    overlay.write_text("training:\n  learning_rate: 1e-4\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: ftspec.dev/v1alpha1\nkind: FineTune\nmetadata:\n\tname: x\n")
    code, out, _ = run(capsys, "validate", "--only-specs", str(ci), str(overlay), GOOD)
    assert code == 0
    assert f"{ci}: skipped (not an ftspec spec" in out
    assert f"{overlay}: skipped" in out
    assert out.splitlines()[-1] == f"{GOOD}: valid"
    code, out, _ = run(capsys, "validate", "--only-specs", str(ci), str(broken))
    assert code == 1
    assert f"{broken}:4:1: error: tab character in indentation" in out
    code, out, _ = run(capsys, "validate", str(ci))  # without the flag, it is checked
    assert code == 1 and 'unknown field "on"' in out


@pytest.mark.parametrize("args", [
    ["validate"], ["validate", "--no-such-flag", GOOD], ["no-such-command"],
    ["validate", GOOD, "--set"],
])
def test_usage_errors_exit_one(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *args)
    assert code == 1
    assert "Error" in err or "error" in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    code, out, _ = run(capsys, "--version")
    assert (code, out) == (0, f"ftspec {version('ftspec')}\n")


def test_traceback_only_in_debug_mode(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    import ftspec.spec.validate as validate_module

    def boom(doc: object, schema: object = None) -> object:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(validate_module, "validate_doc", boom)
    code, out, err = run(capsys, "validate", GOOD)
    assert code == 1
    assert "internal error: RuntimeError" in err
    assert "simulated bug" not in err  # the message may quote input: it goes to the log
    assert "Traceback" not in out + err
    for flag in ("-v", "--debug"):
        code, _, err = run(capsys, flag, "validate", GOOD)
        assert code == 1
        assert "Traceback (most recent call last)" in err and "simulated bug" in err


def _subprocess(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "ftspec.cli", *args], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.slow
def test_plain_output_when_piped_and_with_no_color() -> None:
    piped = _subprocess(["validate", BAD])
    assert piped.returncode == 1
    assert "\x1b[" not in piped.stdout and "error:" in piped.stdout
    forced = _subprocess(["validate", BAD], FORCE_COLOR="1")
    assert "\x1b[" in forced.stdout  # colour exists, and is what the other runs leave out
    no_color = _subprocess(["validate", BAD], FORCE_COLOR="1", NO_COLOR="1")
    assert "\x1b[" not in no_color.stdout
    assert no_color.stdout == piped.stdout
