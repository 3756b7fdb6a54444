"""Day two on the local backend, through the real CLI and real torchtune runs: why a run
failed (status and status --json), the inventory of runs (`ftspec list`), a run's measured
properties (`ftspec output`)."""

from __future__ import annotations

import json
import signal
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
    """A null ``output`` in row 51, past the rows a default plan reads: torchtune fails when
    a step reaches it with an assertion that names neither the row nor the column; the
    reason in status does (issue 36), and ``plan --check-data`` finds it before any run."""
    rows = (workdir / ".ftspec/tiny/llama2/dataset.jsonl").read_text().splitlines()
    bad = json.loads(rows[50])
    bad["output"] = None
    rows[50] = json.dumps(bad)
    (workdir / "bad.jsonl").write_text("\n".join(rows) + "\n")
    sets = ("--set", "data.train.uri=file://bad.jsonl")
    checked = ftspec(workdir, e2e_env, "plan", str(SPEC), *sets, "--check-data")
    assert checked.returncode == 1 and checked.stdout == "", checked.stdout + checked.stderr
    assert (f"{SPEC}:40:13: error: data.train.format: row 51 of {workdir}/bad.jsonl: "
            "column 'output' is null (format alpaca)") in checked.stderr, checked.stderr
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), *sets, "--auto-approve", "--wait")
    assert applied.returncode == 1, applied.stdout + applied.stderr
    (st,) = _json(ftspec(workdir, e2e_env, "status", str(SPEC), *sets, "--json"))
    assert st["phase"] == "Failed"
    why = st["reason"]
    assert why["validity"] == "failed" and why["exit_code"] == 1
    assert why["exception"]["type"] == "AssertionError"
    assert why["exception"]["message"].endswith("got None")
    assert why["exception"]["file"].endswith(".py") and why["exception"]["line"] > 0
    assert why["data"] == {"file": "bad.jsonl", "row": 51, "line": 51, "column": "output",
                           "field": "data.train.format", "problem": "is null",
                           "more_rows": 0}
    human = ftspec(workdir, e2e_env, "status", str(SPEC), *sets)
    assert ("reason (failed): data.train.format: row 51 of bad.jsonl: column 'output' is "
            "null; AssertionError: ") in human.stdout, human.stdout
    assert f"(at {why['exception']['file']}:{why['exception']['line']})" in human.stdout


def test_list_and_measured_properties_outlive_the_spec_file(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    # start-up and saving phases are reported before step 1 and after the last step
    err = applied.stderr
    assert err.index("local.run.tiny-local: torchtune's LoRAFinetuneRecipeSingleDevice "
                     "started; loading the model") < err.index("step 1/16")
    assert "local.run.tiny-local: read 64 rows" in err
    assert err.index("step 16/16") < err.index("local.run.tiny-local: saving a checkpoint")

    (row,) = _json(ftspec(workdir, e2e_env, "list", "--json"))
    assert row["name"] == "tiny-local" and row["target"] == "local"
    assert row["phase"] == "Succeeded" and row["validity"] == "ok"
    assert row["step"] == 16 and row["total_steps"] == 16 and row["loss"] > 0
    assert row["output"] == ".ftspec/runs/tiny-local/output"
    assert row["spec_file"] == str(SPEC) and row["spec_exists"] is True
    assert row["age_s"] >= 0

    got = _json(ftspec(workdir, e2e_env, "output", str(SPEC), "--json"))
    m = got["measured"]
    assert m["validity"] == "ok"
    # the progress bar's own elapsed time: at most the run's wall time
    assert 0 < m["train_runtime_s"] <= got["metrics"]["wall_time_s"]
    # every row of the 64 trained once, each at most max_seq_len (256) tokens, no padding
    assert "64 rows trained" in m["dataset_tokens_how"]
    assert 64 * 20 < m["dataset_tokens"] <= 64 * 256
    assert m["dataset_tokens_per_second"] == pytest.approx(
        m["dataset_tokens"] / m["train_runtime_s"], rel=1e-3)
    assert m["dataset_tokens_per_second_per_device"] == m["dataset_tokens_per_second"]
    peak = m["peak_memory"]
    assert peak["kind"].startswith("cpu peak RSS") and peak["bytes"] > 100 * 2**20
    # kept with the run: read back, not recomputed (the same file, byte for byte)
    kept = (workdir / ".ftspec/runs/tiny-local/measured.json").read_text()
    again = _json(ftspec(workdir, e2e_env, "output", str(SPEC), "--json"))
    assert again["measured"] == m
    assert (workdir / ".ftspec/runs/tiny-local/measured.json").read_text() == kept
    text = ftspec(workdir, e2e_env, "output", str(SPEC))
    assert "dataset_tokens_per_second" in text.stdout and "validity" in text.stdout

    (workdir / SPEC).unlink()  # the run is still listed, from its record
    listed = ftspec(workdir, e2e_env, "list")
    assert listed.returncode == 0, listed.stderr
    assert "tiny-local (spec deleted)" in listed.stdout and "Succeeded" in listed.stdout
    (gone,) = _json(ftspec(workdir, e2e_env, "list", "--json", "--phase", "succeeded"))
    assert gone["spec_exists"] is False
    assert _json(ftspec(workdir, e2e_env, "list", "--json", "--phase", "Failed")) == []


CTRL_C = r"""
set -um  # job control: a background job keeps SIGINT (else bash ignores it there)
# 100 epochs (1,600 steps): still running when Ctrl-C comes, however fast the machine;
# destroy ends it
ftspec apply {spec} --auto-approve --wait --set training.max_steps=null \
  --set training.epochs=100 --set training.max_steps_per_epoch=32 2> apply.err &
pid=$!
seen=no
for _ in $(seq 600); do grep -qE "step [0-9]+/" apply.err 2>/dev/null && seen=yes && break; sleep 0.2; done
echo "saw a step before Ctrl-C: $seen at $(date +%s.%N)"
kill -INT $pid || echo "apply had already ended when Ctrl-C came"
wait $pid
echo "rc=$?"
ftspec status {spec} --json --set training.max_steps=null --set training.epochs=100 \
  --set training.max_steps_per_epoch=32 > status.json
ftspec destroy {spec} --auto-approve > /dev/null
"""


def _default_sigint() -> None:
    """Ctrl-C at its default disposition in the test's shell, whatever the test runner
    inherited: a runner started in the background of a shell without job control ignores
    SIGINT, every process it starts inherits that (bash cannot undo a signal ignored on
    entry), and Python then raises no KeyboardInterrupt: the run went on untouched."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_following_says_the_run_goes_on(workdir: Path,
                                                     e2e_env: dict[str, str]) -> None:
    # in a private PID namespace: every process it starts ends with it
    done = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "bash", "-c",
                           CTRL_C.format(spec=SPEC)], cwd=workdir, env=e2e_env,
                          capture_output=True, text=True, timeout=600, check=False,
                          preexec_fn=_default_sigint)
    assert "rc=130" in done.stdout, done.stdout + done.stderr
    err = (workdir / "apply.err").read_text()
    assert ("Stopped following. The run goes on; watch it with `ftspec status --watch "
            f"{SPEC}`, stop it with `ftspec destroy {SPEC}`.") in err, err
    (st,) = json.loads((workdir / "status.json").read_text())
    assert st["phase"] == "Running", st  # Ctrl-C stopped the following, not the run
