"""A real run that trains fewer steps than its plan is reported invalid, not ok.

The quickstart spec declares ``num_examples: 64`` (16 planned steps of 4 rows); here its
dataset file holds 8 of those rows, so torchtune trains 2 steps and exits 0. ``status``,
``output`` and ``list`` must say the run is invalid and why, from the run's own log and
record, on the local backend with the tiny model (a real torchtune process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.ftspec_proc import as_json, ftspec
from helpers.pidns import private_pid_namespace
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SHORT = Path("data/short.jsonl")
SETS = ("--set", f"data.train.uri=file://{SHORT}")


@private_pid_namespace
def test_run_shorter_than_planned_is_invalid(workdir: Path, e2e_env: dict[str, str]) -> None:
    rows = (workdir / ".ftspec/tiny/llama2/dataset.jsonl").read_text().splitlines()
    (workdir / SHORT).parent.mkdir()
    (workdir / SHORT).write_text("\n".join(rows[:8]) + "\n")

    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), *SETS, "--auto-approve", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr

    (st,) = as_json(ftspec(workdir, e2e_env, "status", str(SPEC), *SETS, "--json"))
    assert st["phase"] == "Succeeded" and st["platform"]["exit_code"] == 0, st
    assert st["metrics"]["step"] == 2, st["metrics"]  # torchtune's own step lines
    assert st["reason"] == {"validity": "invalid", "trained": "trained 2 of 16 planned steps"}
    text = ftspec(workdir, e2e_env, "status", str(SPEC), *SETS)
    assert "reason (invalid): trained 2 of 16 planned steps" in text.stdout, text.stdout

    got = as_json(ftspec(workdir, e2e_env, "output", str(SPEC), *SETS, "--json"))
    assert got["measured"]["validity"] == "invalid", got
    assert got["measured"]["validity_reason"] == "trained 2 of 16 planned steps"

    (row,) = as_json(ftspec(workdir, e2e_env, "list", "--json"))
    assert row["phase"] == "Succeeded" and row["validity"] == "invalid", row
    assert "Succeeded (invalid)" in ftspec(workdir, e2e_env, "list").stdout
