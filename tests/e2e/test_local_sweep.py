"""A sweep on the local backend, through the real CLI and real torchtune runs of the tiny
model: examples/tiny-sweep.yaml's three points train, are compared (table, --json, --plot),
a value added to the grid plans one create beside three no-ops, a value removed plans its
run's delete beside two no-ops, and destroy (of the shrunk grid) removes all three runs."""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.tinyspec import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
SPEC = "examples/tiny-sweep.yaml"
NAMES = ["tiny-sweep-lr-1e-2", "tiny-sweep-lr-3e-3", "tiny-sweep-lr-1e-3"]


def ftspec(workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([FTSPEC, *args], cwd=workdir, env=env, capture_output=True,
                          check=False, text=True, timeout=900)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_a_sweep_trains_is_compared_grows_by_one_and_is_destroyed(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    shutil.copy(REPO / SPEC, workdir / SPEC)
    env = {**e2e_env, "NO_COLOR": "1"}
    applied = ftspec(workdir, env, "apply", SPEC, "--auto-approve", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "Apply complete: 3 runs started." in applied.stdout
    # one block for the three runs, naming what differs; the configs are not printed
    assert (f"# 3 runs of {SPEC} will be created, differing in learning rate "
            "(0.01, 0.003, 0.001)") in applied.stdout, applied.stdout
    assert "lora_rank: 8" not in applied.stdout
    assert applied.stdout.rstrip().endswith("3 runs succeeded."), applied.stdout

    measuring = ftspec(workdir, env, "output", SPEC, "--compare", "--json")
    got = _json(measuring)
    # the first comparison counts the tokens once (the points read the same tokenizer and
    # data) and says so on stderr as it goes
    said = measuring.stderr.splitlines()
    start = said.index(f"{NAMES[0]}: counting the dataset's tokens with the run's tokenizer "
                       "(once per run, kept beside it)")
    counted = re.fullmatch(rf"{NAMES[0]}: (\d+) tokens in 64 rows, counted in \d+(s|m \d\ds)",
                           said[start + 1])
    assert counted, measuring.stderr
    assert said[start + 2:start + 4] == [
        f"{name}: {counted[1]} tokens in 64 rows, as counted for a run with the same "
        "tokenizer and data" for name in NAMES[1:]], measuring.stderr
    assert got["fields"] == ["training.learning_rate"]
    rows = got["points"]
    assert [r["name"] for r in rows] == NAMES
    assert [r["point"] for r in rows] == [{"training.learning_rate": v}
                                          for v in (1.0e-2, 3.0e-3, 1.0e-3)]
    for row in rows:
        m = row["measured"]
        assert row["phase"] == "Succeeded" and row["validity"] == "ok" == m["validity"]
        assert row["metrics"]["steps"] == 16 and math.isfinite(row["final_loss"])
        assert row["final_loss"] < row["metrics"]["first_loss"]  # every point learned
        assert 0 < m["train_runtime_s"] <= row["metrics"]["wall_time_s"]
        assert m["dataset_tokens_per_second"] > 0 and m["peak_memory"]["bytes"] > 0
        assert (workdir / ".ftspec/runs/tiny-sweep/output" / row["name"][11:]
                / "epoch_0/adapter_model.safetensors").stat().st_size > 0
    # the same seed and data: a higher learning rate moves the tiny adapters further
    losses = [r["final_loss"] for r in rows]
    assert losses == sorted(losses) and got["best"] == NAMES[0]

    table = ftspec(workdir, env, "output", SPEC, "--compare", "--plot", "sweep.png")
    assert table.returncode == 0, table.stderr
    assert "counting" not in table.stderr  # measured once, kept with each run
    lines = table.stdout.splitlines()
    assert lines[0] == f"Sweep of {SPEC}: 3 points"
    assert lines[2].split() == ["NAME", "training.learning_rate", "PHASE", "STEPS",
                                "FINAL", "LOSS", "RUNTIME", "TOKENS/S", "TOKENS/S/DEV",
                                "PEAK", "MEM", "CPU/CORE", "AVG", "RSS", "MAX", "GPU", "AVG",
                                "VALIDITY"]
    first = lines[3].split()
    assert first[:5] == [NAMES[0], "0.01", "Succeeded", "16/16", f"{losses[0]:.4f}"]
    assert first[-2:] == ["n/a", "ok"]  # no GPU here; then the validity
    assert first[-5].endswith("%") and first[-3] == "MiB"  # CPU per core, RSS max
    assert (workdir / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    listed = _json(ftspec(workdir, env, "list", "--json"))
    assert sorted(r["name"] for r in listed) == sorted(NAMES)

    text = (workdir / SPEC).read_text(encoding="utf-8")
    grown = text.replace("[1.0e-2, 3.0e-3, 1.0e-3]", "[1.0e-2, 3.0e-3, 1.0e-3, 3.0e-2]")
    assert grown != text
    (workdir / SPEC).write_text(grown, encoding="utf-8")
    plan = _json(ftspec(workdir, env, "plan", SPEC, "--json"))
    actions = {c["address"]: c["action"] for c in plan["changes"]}
    assert actions == {**{f"local.run.{n}": "no-op" for n in NAMES},
                       "local.run.tiny-sweep-lr-3e-2": "create"}

    # a value removed from the grid: its point's run is planned for deletion
    shrunk = text.replace("[1.0e-2, 3.0e-3, 1.0e-3]", "[1.0e-2, 3.0e-3]")
    (workdir / SPEC).write_text(shrunk, encoding="utf-8")
    plan = _json(ftspec(workdir, env, "plan", SPEC, "--json"))
    actions = {c["address"]: c["action"] for c in plan["changes"]}
    assert actions == {**{f"local.run.{n}": "no-op" for n in NAMES[:2]},
                       f"local.run.{NAMES[2]}": "delete"}
    human = ftspec(workdir, env, "plan", SPEC)
    assert "Plan: 0 to add, 0 to change, 1 to destroy." in human.stdout, human.stdout
    assert "not a point of its sweep.grid now" in human.stdout, human.stdout

    # destroy with the shrunk grid still removes every point's run, the removed one too
    gone = ftspec(workdir, env, "destroy", SPEC, "--auto-approve")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert "Destroy complete! Resources: 3 destroyed." in gone.stdout
    assert _json(ftspec(workdir, env, "list", "--json")) == []
    assert all(s["phase"] == "Unknown" for s in _json(ftspec(workdir, env, "status", SPEC,
                                                             "--json")))


def test_one_point_at_a_time_the_runs_never_overlap(workdir: Path,
                                                    e2e_env: dict[str, str]) -> None:
    """``sweep.max_parallel: 1``: apply returns with one point running and two queued, the
    points then train one after another in grid order (their run intervals, read back from
    status, never overlap), and the comparison says no point shared the machine."""
    shutil.copy(REPO / SPEC, workdir / SPEC)
    env = {**e2e_env, "NO_COLOR": "1"}
    sets = ("--set", "sweep.max_parallel=1", "--set", "training.max_steps=2")
    applied = ftspec(workdir, env, "apply", SPEC, *sets, "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    said = applied.stdout + applied.stderr  # the apply's events go to stderr
    assert f"local.run.{NAMES[0]}: created, running" in said, said
    for name in NAMES[1:]:
        assert f"local.run.{name}: created, queued" in said, said
    # the plan's runs differ in their learning rate only (a point's queue place is not shown)
    assert "differing in learning rate (0.01, 0.003, 0.001)\n" in applied.stdout, said
    assert "queue.max_parallel = 1" in applied.stdout, said
    waited = ftspec(workdir, env, "apply", SPEC, *sets, "--auto-approve", "--wait")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert waited.stdout.rstrip().endswith("3 runs succeeded."), waited.stdout
    # piped, the points' step lines are told apart: each names its point (the third point
    # was still queued when the wait began, so its steps are all followed)
    steps = [line for line in waited.stderr.splitlines() if re.search(r"\bstep \d+/", line)]
    assert steps and all(re.match(rf"({'|'.join(NAMES)}): step \d+/\d+ ", line)
                         for line in steps), waited.stderr
    assert any(line.startswith(f"{NAMES[2]}: step 2/") for line in steps), steps

    statuses = _json(ftspec(workdir, env, "status", SPEC, "--json"))
    spans = []
    for name, status in zip(NAMES, statuses, strict=True):
        assert status["address"] == f"local.run.{name}" and status["phase"] == "Succeeded"
        platform = status["platform"]
        spans.append((platform["run_started_at"], platform["ended_at"]))
    assert [s[0] for s in spans] == sorted(s[0] for s in spans)  # grid order
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, spans
    assert statuses[2]["platform"]["queued"]["max_parallel"] == 1  # it had to wait

    got = _json(ftspec(workdir, env, "output", SPEC, *sets, "--compare", "--json"))
    assert [p["ran_with"] for p in got["points"]] == [[], [], []]
    table = ftspec(workdir, env, "output", SPEC, *sets, "--compare")
    assert "*" not in table.stdout and "measured while other points" not in table.stdout
