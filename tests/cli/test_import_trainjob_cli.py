"""`ftspec import trainjob FILE`: the written spec validates, errors are located, and the
`--live` form is refused without the file it writes (its cluster side: integration tests)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.cli_run import run

CORPUS = Path(__file__).parents[1] / "importers" / "corpus" / "trainjob"


def test_import_trainjob_writes_a_spec_that_validates(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    spec = tmp_path / "job.yaml"
    code, _, err = run(capsys, "import", "trainjob", str(CORPUS / "runtime-patches.yaml"),
                       "-o", str(spec))
    assert code == 0, err
    assert f"{CORPUS / 'runtime-patches.yaml'}:43:5: warning: spec.trainer.env" in err
    code, out, err = run(capsys, "validate", str(spec))
    assert code == 0, err
    assert "runs its own program" in out + err


def test_import_trainjob_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    other = tmp_path / "job.yaml"
    other.write_text("apiVersion: v1\nkind: ConfigMap\n")
    code, _, err = run(capsys, "import", "trainjob", str(other))
    assert code == 1 and f"{other}:2:1: error" in err
    code, _, err = run(capsys, "import", "trainjob", "--live", "ml/x")
    assert code != 0 and "--live NAMESPACE/NAME with -o SPEC" in err
    code, _, err = run(capsys, "import", "trainjob", "extra=1", str(other))
    assert code != 0
