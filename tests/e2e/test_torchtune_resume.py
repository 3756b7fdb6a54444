"""training.checkpointing.resume_from on torchtune (the default launcher), run for real on the
local backend with the tiny model, through the ftspec CLI:

- A, the reference: the quickstart spec for 2 epochs (32 steps), uninterrupted;
- B: the same spec, its process killed (SIGKILL, a preemption) once torchtune has saved the
  first epoch's checkpoint and recipe state. A run that is *configured* for 1 epoch cannot be
  resumed by torchtune: its checkpointer writes the recipe state (optimizer, seed, epochs run,
  the data loader's position) after every epoch but the last, so B is configured for 2 epochs
  and stopped after its first, as a preempted run is;
- C: the spec with ``resume_from`` = B's ``epoch_0`` folder, in an output folder of its own;
- then B resumes its own checkpoint: refused at plan while it lies in B's run folder (apply
  moves that folder to the kept generation first), then ``destroy`` keeps it as generation 1
  and B is applied again with ``resume_from`` there.

C (and B resumed) must start at step 17 in epoch 2 (not at step 1: the shipped single-device recipe would
restart there, which ``ftspec.runtime.torchtune_resume`` fixes) and train A's steps 17..32:
the same learning rates (the schedule continues, no second warm-up) and the same losses.

The tolerance: relative 1e-6 on each step's loss, with equality expected. On CPU in fp32, one
process, a fixed seed, LoRA dropout 0, the resumed run performs the same operations on the
same tensors in the same order as A (same adapter and optimizer state, the same shuffled
batches: the sampler is seeded by seed + epoch, and the restored data loader starts the
epoch afresh), so its losses are A's bit for bit (as measured: 3.610883951187134 at step 32
in both). The 1e-6 allowance is there only for a reduction split differently across intra-op
threads, were the two processes to get different thread counts on a loaded machine; a lost
optimizer state or a restarted schedule moves the losses by far more (already at step 17).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.pidns import private_pid_namespace
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
STEPS_PER_EPOCH = 16  # the 64 tiny rows, 4 a step
REL_TOL = 1e-6


def ftspec(workdir: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FTSPEC, *args], check=False, cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600)


def _spec(workdir: Path, name: str) -> Path:
    """A copy of the quickstart spec per run: one spec file keeps one run (a renamed
    ``metadata.name`` in the same file would plan the other's removal)."""
    path = SPEC.parent / f"{name}.yaml"
    shutil.copy(workdir / SPEC, workdir / path)
    return path


def _sets(name: str, resume_from: str | None = None) -> list[str]:
    values = {"metadata.name": name, "training.epochs": "2",
              "output.uri": f"file://.ftspec/runs/{name}/output"}
    if resume_from is not None:
        values["training.checkpointing.resume_from"] = resume_from
    return [x for k, v in values.items() for x in ("--set", f"{k}={v}")]


def _status(workdir: Path, env: dict[str, str], spec: Path, sets: list[str]) -> dict[str, Any]:
    done = ftspec(workdir, env, "status", str(spec), *sets, "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    (row,) = json.loads(done.stdout)
    return dict(row)


STEP_LINE = re.compile(r"Step (\d+) \| loss:(\S+) lr:(\S+)")
"""torchtune's StdoutLogger line, the loss and learning rate at full precision."""


def _steps(workdir: Path, name: str) -> dict[int, tuple[float, float]]:
    """step -> (loss, lr) from the run's own log."""
    log = (workdir / f".ftspec/runs/{name}/train.log").read_text()
    return {int(m[1]): (float(m[2]), float(m[3])) for m in STEP_LINE.finditer(log)}


def _preempt_after_first_epoch(workdir: Path, env: dict[str, str], spec: Path,
                               sets: list[str]) -> Path:
    """Start B in the background and kill its training process once the first epoch's
    recipe state is saved; B's output folder."""
    started = ftspec(workdir, env, "apply", str(spec), *sets, "--auto-approve")
    assert started.returncode == 0, started.stdout + started.stderr
    run = workdir / ".ftspec/runs/b-stopped"
    log = run / "train.log"
    deadline = time.monotonic() + 300
    # the checkpointer logs this line after torch.save has written the file
    while "Recipe checkpoint of size" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, log.read_text()[-3000:] if log.exists() else ""
        time.sleep(0.2)
    child = json.loads((run / "child.json").read_text())["pid"]
    os.kill(child, signal.SIGKILL)
    while not (run / "exit.json").exists():
        assert time.monotonic() < deadline
        time.sleep(0.2)
    return run / "output"


@private_pid_namespace
def test_resumed_run_continues_the_stopped_one_to_the_reference_loss(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    # A: the reference, 2 epochs uninterrupted
    spec_a, sets_a = _spec(workdir, "a-reference"), _sets("a-reference")
    done = ftspec(workdir, e2e_env, "apply", str(spec_a), *sets_a, "--auto-approve", "--wait")
    assert done.returncode == 0, done.stdout + done.stderr
    a = _status(workdir, e2e_env, spec_a, sets_a)
    assert a["phase"] == "Succeeded" and a["metrics"]["step"] == 32, a
    ref = _steps(workdir, "a-reference")
    assert sorted(ref) == list(range(1, 33))

    # B: stopped after its first epoch, its checkpoint and recipe state saved
    spec_b, sets_b = _spec(workdir, "b-stopped"), _sets("b-stopped")
    out_b = _preempt_after_first_epoch(workdir, e2e_env, spec_b, sets_b)
    assert (out_b / "epoch_0" / "adapter_model.pt").is_file()
    assert (out_b / "recipe_state" / "recipe_state.pt").is_file()
    assert not (out_b / "epoch_1").exists()
    b = _status(workdir, e2e_env, spec_b, sets_b)
    assert b["phase"] == "Failed" and STEPS_PER_EPOCH <= b["metrics"]["step"] < 32, b
    # B's first epoch is A's (same seed, same data): what C resumes from is A's epoch 1
    first = _steps(workdir, "b-stopped")
    assert all(first[s] == ref[s] for s in range(1, STEPS_PER_EPOCH + 1))

    # C: resumed from B's epoch_0
    spec_c = _spec(workdir, "c-resumed")
    sets_c = _sets("c-resumed", "file://.ftspec/runs/b-stopped/output/epoch_0")
    planned = ftspec(workdir, e2e_env, "plan", str(spec_c), *sets_c)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    done = ftspec(workdir, e2e_env, "apply", str(spec_c), *sets_c, "--auto-approve", "--wait")
    assert done.returncode == 0, done.stdout + done.stderr
    config = (workdir / ".ftspec/runs/c-resumed/launch/config.yaml").read_text()
    assert "resume_from_checkpoint: true" in config
    assert "adapter_checkpoint: ../../b-stopped/output/epoch_0/adapter_model.pt" in config
    log_c = (workdir / ".ftspec/runs/c-resumed/train.log").read_text()
    # torchtune's own progress line: epoch|step|loss, from epoch 2 step 17
    assert "2|17|Loss: " in log_c and "1|1|Loss" not in log_c and "Step 1 |" not in log_c
    c = _status(workdir, e2e_env, spec_c, sets_c)
    assert c["phase"] == "Succeeded" and c.get("reason") is None, c  # not "trained 16 of 32"
    assert c["metrics"]["step"] == 32 and c["metrics"]["epoch"] == 2
    resumed = _steps(workdir, "c-resumed")
    assert c["metrics"]["curve"]["step"] == sorted(resumed)  # what status shows
    assert sorted(resumed) == list(range(STEPS_PER_EPOCH + 1, 33))  # 17..32, no step 1

    print("\nstep, reference loss, resumed loss, lr")
    for step in sorted(resumed):
        print(step, f"{ref[step][0]:.9f}", f"{resumed[step][0]:.9f}", resumed[step][1])
    for step, (loss, lr) in resumed.items():
        assert lr == ref[step][1], (step, lr, ref[step])  # the schedule went on, no warm-up
        assert math.isclose(loss, ref[step][0], rel_tol=REL_TOL), (step, loss, ref[step])
    final_a, final_c = a["metrics"]["final_loss"], c["metrics"]["final_loss"]
    assert math.isclose(final_c, final_a, rel_tol=REL_TOL), (final_a, final_c)
    # and the adapter C saved is A's final one
    import torch

    got = torch.load(workdir / ".ftspec/runs/c-resumed/output/epoch_1/adapter_model.pt")
    want = torch.load(workdir / ".ftspec/runs/a-reference/output/epoch_1/adapter_model.pt")
    assert got.keys() == want.keys()
    assert all(torch.allclose(got[k], want[k], rtol=1e-5, atol=1e-7) for k in got)

    # B resumes its own checkpoint: inside its run folder, which a replace moves to the
    # kept generation before the new run starts, it is refused with where it will be kept
    own = "file://.ftspec/runs/b-stopped/output/epoch_0"
    refused = ftspec(workdir, e2e_env, "plan", str(spec_b), *_sets("b-stopped", own))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "error: training.checkpointing.resume_from: the checkpoint " in refused.stderr
    kept = ".ftspec/history/b-stopped/1"
    assert f"then resume from file://{kept}/output/epoch_0" in refused.stderr, refused.stderr
    gone = ftspec(workdir, e2e_env, "destroy", str(spec_b), *sets_b, "--auto-approve")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert (workdir / kept / "output/recipe_state/recipe_state.pt").is_file()
    sets_d = _sets("b-stopped", f"file://{kept}/output/epoch_0")
    done = ftspec(workdir, e2e_env, "apply", str(spec_b), *sets_d, "--auto-approve", "--wait")
    assert done.returncode == 0, done.stdout + done.stderr
    again = _steps(workdir, "b-stopped")
    assert sorted(again) == list(range(STEPS_PER_EPOCH + 1, 33))
    assert all(math.isclose(again[s][0], ref[s][0], rel_tol=REL_TOL) and again[s][1] == ref[s][1]
               for s in again), (again, ref)
