"""Day two on the local backend, through the real CLI and real torchtune runs: why a run
failed (status and status --json), the inventory of runs (`ftspec list`), a run's measured
properties (`ftspec output`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")


def ftspec(workdir: Path, env: dict[str, str], *args: str, timeout: float = 600
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FTSPEC, *args], cwd=workdir, env=env, capture_output=True, check=False,
                          text=True, timeout=timeout)


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def test_a_run_that_fails_says_why(workdir: Path, e2e_env: dict[str, str]) -> None:
    broken = workdir / "broken"
    shutil.copytree(workdir / ".ftspec/tiny/llama2/model", broken)
    (broken / "tokenizer.model").write_bytes(b"not a sentencepiece model\n")
    sets = ("--set", "model.tokenizer.uri=file://broken/tokenizer.model")
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), *sets, "--auto-approve", "--wait")
    assert applied.returncode == 1, applied.stdout + applied.stderr
    (st,) = _json(ftspec(workdir, e2e_env, "status", str(SPEC), *sets, "--json"))
    assert st["phase"] == "Failed"
    why = st["reason"]
    assert why["validity"] == "failed" and why["exit_code"] == 1
    assert why["exception"]["type"] == "RuntimeError"
    assert "broken/tokenizer.model" in why["exception"]["message"]
    assert why["exception"]["file"].endswith(".py") and why["exception"]["line"] > 0
    human = ftspec(workdir, e2e_env, "status", str(SPEC), *sets)
    assert "reason (failed): RuntimeError: " in human.stdout, human.stdout
    assert f"(at {why['exception']['file']}:{why['exception']['line']})" in human.stdout
