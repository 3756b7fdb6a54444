"""`ftspec validate` with ``FTSPEC_CRD_DIR``: the compiled objects against the CRD files' enums
and CEL rules (the upstream CRDs here), each violation located at the spec field behind it; a
missing evaluator is said, never silent; without the variable nothing is read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ftspec.compiler import crd_rules
from helpers.cli_run import run
from helpers.upstream import upstream_root

ROOT = Path(__file__).resolve().parents[2]
GOOD = "examples/kubeflow-llama32-1b-lora-alpaca.yaml"


@pytest.fixture
def crd_dirs(monkeypatch: pytest.MonkeyPatch) -> str:
    up = upstream_root()
    folders = [up / "kubeflow-trainer" / "crds", up / "kuberay" / "crds"]
    assert all(f.is_dir() for f in folders), f"upstream CRDs not found under {up}"
    value = os.pathsep.join(map(str, folders))
    monkeypatch.setenv(crd_rules.CRD_DIR_ENV, value)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("NO_COLOR", "1")
    return value


def _spec(tmp_path: Path, extra: str, target: str = "kubeflow") -> Path:
    text = (ROOT / GOOD).read_text()
    text = text.replace("target: kubeflow", f"target: {target}", 1) if target != "kubeflow" \
        else text
    path = tmp_path / "job.yaml"
    path.write_text(text + extra)
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.mark.slow
def test_example_passes_the_crd_rules(crd_dirs: str, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    code, out, _ = run(capsys, "validate", GOOD)
    assert (code, out.strip()) == (0, f"{GOOD}: valid")


def test_trainjob_rule_refused_at_the_overrides_line(
        crd_dirs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, "overrides:\n  trainjob:\n    spec:\n      managedBy: example.com/mine\n")
    code, out, _ = run(capsys, "validate", str(spec))
    line = _line_of(spec, "managedBy: example.com/mine")
    assert code == 1
    assert f"{spec}:{line}:18: error: overrides.trainjob.spec.managedBy: the TrainJob CRD in " \
        "FTSPEC_CRD_DIR refuses spec.managedBy: ManagedBy must be" in out


@pytest.mark.slow
def test_rayjob_rule_refused(crd_dirs: str, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    patch = ("overrides:\n  rayjob:\n    spec:\n      deletionStrategy:\n"
             "        onSuccess: {policy: DeleteCluster}\n")
    spec = _spec(tmp_path, patch, target="kuberay")
    code, out, _ = run(capsys, "validate", str(spec))
    line = _line_of(spec, "deletionStrategy:")
    assert code == 1, out
    assert f"{spec}:{line}:" in out and "requires either BOTH onSuccess and onFailure" in out


def test_missing_evaluator_is_said(crd_dirs: str, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(crd_rules, "evaluator_available", lambda: False)
    code, out, _ = run(capsys, "validate", GOOD)
    assert code == 0
    assert "warning: deploy.target: CRD rules not checked: cel-python is not installed" in out


def test_nothing_read_without_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(crd_rules.CRD_DIR_ENV, raising=False)
    monkeypatch.chdir(ROOT)
    spec = _spec(tmp_path, "overrides:\n  trainjob:\n    spec:\n      managedBy: example.com/mine\n")
    code, out, _ = run(capsys, "validate", str(spec))
    assert (code, "CRD" in out) == (0, False)
