"""The progress line of a real tiny accelerate run (TRL's SFTTrainer through ftspec's compiled
command) carries the step, the total steps, the percent, the time elapsed and the time left,
as torchtune's does; `status` and `list` say the same words once it ended. The spec leaves
the number of rows out, so the compiled job has no total: the trainer's own progress bar
gives it (before, the line was ``step 3 · epoch 0.1875 · loss …`` with neither)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.ftspec_proc import as_json, ftspec
from helpers.pidns import private_pid_namespace
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SETS = ("--set", "launcher=accelerate", "--set", "method.lora.output=false",
        "--set", "data.train.num_examples=null")
LINE = re.compile(r"^step (\d+)/16 \((\d+)%\) · epoch [\d.]+ · loss [\d.]+.* · "
                  r"((?:\d+[dhms] ?)+) elapsed(?: · ((?:\d+[dhms] ?)+) left)?$")


@private_pid_namespace
def test_accelerate_progress_line_has_total_percent_and_time_left(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait", *SETS)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "max steps -" in applied.stdout  # the compiled job does not know the total
    lines = [x for x in applied.stderr.splitlines() if x.startswith("step ")]
    found = [LINE.match(x) for x in lines]
    assert len(lines) == 16 and all(found), [x for x in lines if not LINE.match(x)] or lines
    steps = [(int(m[1]), int(m[2]), m[4]) for m in found if m]
    assert [(s, p) for s, p, _ in steps] == [(s, 100 * s // 16) for s in range(1, 17)]
    assert steps[0][2] is None  # one step is no pace
    # from step 2 on the bar's clock times the steps (whole seconds: the first two may
    # share one)
    assert all(left is not None for _, _, left in steps[2:]), lines
    assert steps[-1][2] == "0s", lines
    (status,) = as_json(ftspec(workdir, e2e_env, "status", str(SPEC), "--json", *SETS))
    m = status["metrics"]
    assert (status["phase"], m["step"], m["total_steps"], m["percent"]) == \
        ("Succeeded", 16, 16, 100)
    assert m["elapsed_s"] > 0 and "seconds_left" not in m  # ended: nothing left
    shown = ftspec(workdir, e2e_env, "status", str(SPEC), *SETS).stdout
    assert re.search(r"Succeeded  step 16/16 \(100%\) · epoch 1 · \S.* elapsed\n", shown), shown
    (row,) = as_json(ftspec(workdir, e2e_env, "list", "--json"))
    assert (row["step"], row["percent"], row["seconds_left"]) == (16, 100, None)
    ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *SETS)
