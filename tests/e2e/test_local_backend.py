"""The local backend through the real CLI: apply / status / plan / destroy of the compiled
tiny torchtune job, with ftspec killed mid-run, the training process killed, and applies
while a run is active. Every run is a real torchtune (or accelerate) process; every test
runs in a private PID namespace (``helpers.pidns``), since destroy and replace signal."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from helpers.follow import follow
from helpers.measure import Measurement, TreeSampler
from helpers.pidns import private_pid_namespace
from helpers.polling import wait_for
from helpers.tinyspec import SPEC
from helpers.trainer_log import summary, train_records

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
LONG = ("--set", "training.max_steps=null", "--set", "training.epochs=5",
        "--set", "training.max_steps_per_epoch=32")
STATE = Path(".ftspec/local/tiny-local.json")
RUN_DIR = Path(".ftspec/runs/tiny-local")


def ftspec(workdir: Path, env: dict[str, str], *args: str, timeout: float = 600
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FTSPEC, *args], check=False, cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=timeout)


def status(workdir: Path, env: dict[str, str], *sets: str) -> dict[str, Any]:
    done = ftspec(workdir, env, "status", str(SPEC), "--json", *sets)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)
    assert "Traceback" not in done.stderr
    return dict(entry)



def supervisor_pid(workdir: Path) -> int | None:
    try:
        return int(json.loads((workdir / STATE).read_text())["supervisor_pid"])
    except (OSError, ValueError, KeyError, TypeError):  # absent, or an intent (no pid yet)
        return None


def training_processes(workdir: Path) -> list[psutil.Process]:
    """Live processes running a recipe or the hf_sft entrypoint from this working dir."""
    out = []
    for p in psutil.process_iter(["cmdline", "cwd", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if (("lora_finetune" in cmd or "hf_sft" in cmd) and p.info["cwd"] == str(workdir)
                and p.info["status"] != psutil.STATUS_ZOMBIE and "supervise" not in cmd):
            out.append(p)
    return out


def alive(pid: int | None) -> bool:
    """Running (a zombie waiting for init to reap it is not)."""
    try:
        return pid is not None and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture(autouse=True)
def _stop_leftover_runs(workdir: Path) -> Any:
    """A failed test must not leave its run training in the background."""
    yield
    pid = supervisor_pid(workdir)
    if alive(pid):
        assert pid is not None
        os.killpg(os.getpgid(pid), signal.SIGKILL)


def has_step(workdir: Path) -> bool:
    log = workdir / RUN_DIR / "train.log"
    return log.exists() and "|Loss: " in log.read_text(errors="replace")


def measure(name: str, workdir: Path, extra: Callable[[], list[int]] = list) -> TreeSampler:
    m = Measurement(name, f"ftspec apply {SPEC} (local backend)")
    return TreeSampler(m, lambda: [p for p in [supervisor_pid(workdir)] if p] + extra())


@private_pid_namespace
def test_quickstart_apply_wait_status_destroy(workdir: Path, e2e_env: dict[str, str]) -> None:
    quick = ftspec(workdir, e2e_env, "quickstart")
    assert quick.returncode == 0, quick.stderr
    assert "ftspec apply examples/tiny-local.yaml --auto-approve --wait" in quick.stdout

    with measure("local_apply_wait_tiny", workdir):
        applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    # live progress, one plain line per step off a terminal, from torchtune's metric logger
    assert "step 16/16 (100%) · epoch 1 · loss " in applied.stderr, applied.stderr
    assert " · lr " in applied.stderr and " tok/s" in applied.stderr
    st = status(workdir, e2e_env)
    assert st["phase"] == "Succeeded", st
    assert st["platform"]["exit_code"] == 0
    assert math.isfinite(st["metrics"]["final_loss"]) and st["metrics"]["step"] == 16
    assert "final loss" in st["message"]
    # the quickstart learns: from about ln(320) = 5.8 the loss falls clearly within its epoch
    losses = st["metrics"]["curve"]["loss"]
    assert len(losses) == 16 and 5.3 < losses[0] < 6.3, losses
    assert sum(losses[-4:]) / 4 < sum(losses[:2]) / 2 - 1.0, losses
    assert st["metrics"]["elapsed_s"] > 0, st["metrics"]  # time is measured, not asserted
    assert st["outputs"]["adapter"] == str(RUN_DIR / "output/epoch_0/adapter_model.safetensors")
    text = ftspec(workdir, e2e_env, "status", str(SPEC))
    assert "Succeeded  step 16/16 (100%)" in text.stdout, text.stdout
    assert "pid" not in text.stdout and "\r" not in text.stdout  # details only with -v
    verbose = ftspec(workdir, e2e_env, "status", str(SPEC), "-v")
    assert "argv:" in verbose.stdout and "\r" not in verbose.stdout
    # what the run produced, read from its files and logged metrics
    produced = ftspec(workdir, e2e_env, "output", str(SPEC), "--json")
    assert produced.returncode == 0, produced.stderr
    got = json.loads(produced.stdout)
    assert got["adapter"] == st["outputs"]["adapter"]
    assert got["checkpoints"] == [str(RUN_DIR / "output/epoch_0")]
    assert got["metrics"]["steps"] == 16 and got["metrics"]["train_loss"] == losses[-1]
    assert got["metrics"]["wall_time_s"] == st["metrics"]["elapsed_s"]
    one = ftspec(workdir, e2e_env, "output", str(SPEC), "adapter")
    assert one.stdout.strip() == got["adapter"], one.stdout + one.stderr
    png = workdir / "curves.png"
    plotted = ftspec(workdir, e2e_env, "output", str(SPEC), "--plot", str(png))
    assert plotted.returncode == 0 and "train_loss" in plotted.stdout, plotted.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    followed = ftspec(workdir, e2e_env, "logs", str(SPEC), "--follow", timeout=30)
    assert followed.returncode == 0 and "run ended: exit code 0" in followed.stdout
    out = workdir / RUN_DIR / "output" / "epoch_0" / "adapter_model.safetensors"
    assert out.stat().st_size > 0

    plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode")
    assert plan.returncode == 0, plan.stdout + plan.stderr  # succeeded, same spec: no-op
    logs = ftspec(workdir, e2e_env, "logs", str(SPEC))
    assert "[ftspec] run ended: exit code 0" in logs.stdout

    gone = ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert status(workdir, e2e_env)["platform"] == {"exists": False}


@private_pid_namespace
def test_logs_follow_a_running_job_and_end_with_it(workdir: Path, e2e_env: dict[str, str]
                                                   ) -> None:
    """`logs --follow` started while the run starts: the training steps arrive as they are
    logged, well before the run ends, and the command exits once the run has ended."""
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert not has_step(workdir)  # nothing trained yet: every step line is new to --follow
    ended = workdir / RUN_DIR / "exit.json"
    got = follow([FTSPEC, "logs", str(SPEC), "--follow"], workdir, e2e_env, ended.exists)
    assert got.returncode == 0 and got.ended_at is not None and got.exited_at is not None
    steps = [(at, int(m.group(1))) for at, line in got.lines
             if (m := re.search(r"Step (\d+) \| loss:", line))]
    assert [step for _, step in steps] == list(range(1, 17)), got.lines
    # streamed, not dumped at the end: the steps came in several reads while the run ran
    # (the tiny run trains 16 steps in a second or two, so no fixed margin fits every machine)
    assert steps[0][0] < steps[-1][0] <= got.ended_at, "the steps arrived in one read"
    assert len(got.before_end("| loss:")) >= 2
    assert got.lines[-1][1] == "[ftspec] run ended: exit code 0", got.lines[-3:]
    assert got.exited_at - got.ended_at < 5.0  # it stops polling once the run has ended


@private_pid_namespace
def test_tensorboard_event_files_from_torchtune(workdir: Path, e2e_env: dict[str, str]
                                                ) -> None:
    """report_to: [tensorboard] -> torchtune's TensorBoardLogger writes event files that
    TensorBoard's own reader loads; `output` finds them; progress falls back to the recipe's
    step|loss line."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    tb = ("--set", "training.logging.report_to=[tensorboard]")
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait", *tb)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "step 16/16 (100%) · epoch 1 · loss " in applied.stderr, applied.stderr
    got = json.loads(ftspec(workdir, e2e_env, "output", str(SPEC), "--json", *tb).stdout)
    (logdir,) = got["tensorboard"]
    assert logdir.startswith(str(RUN_DIR / "output/logs/run_0_")), logdir  # torchtune: a run a dir
    events = EventAccumulator(str(workdir / logdir), size_guidance={"tensors": 0})  # all
    events.Reload()
    assert {"loss", "lr"} <= set(events.Tags()["tensors"])  # torch's SummaryWriter format
    loss = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
            for e in events.Tensors("loss")]
    assert [step for step, _ in loss] == list(range(1, 17))
    st = status(workdir, e2e_env, *tb)
    assert [round(v, 4) for _, v in loss] == [round(x, 4) for x in
                                               st["metrics"]["curve"]["loss"]]
    ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *tb)


@private_pid_namespace
def test_tensorboard_event_files_from_accelerate_and_trl(workdir: Path,
                                                       e2e_env: dict[str, str]) -> None:
    """report_to: [tensorboard] on the accelerate launcher -> the trainer's TensorBoard
    callback writes event files under the output folder that TensorBoard's own reader loads,
    with the steps and losses the run logged; `output` finds them."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tb = ("--set", "launcher=accelerate", "--set", "method.lora.output=false",
          "--set", "training.max_steps=4", "--set", "training.logging.report_to=[tensorboard]")
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait", *tb)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    got = json.loads(ftspec(workdir, e2e_env, "output", str(SPEC), "--json", *tb).stdout)
    (logdir,) = got["tensorboard"]
    assert logdir.startswith(str(RUN_DIR / "output/runs/")), logdir  # the trainer's default
    events = EventAccumulator(str(workdir / logdir), size_guidance={"scalars": 0})  # all
    events.Reload()
    # the trainer's callback writes simple scalars ("train/" + the logged key)
    assert {"train/loss", "train/learning_rate"} <= set(events.Tags()["scalars"]), events.Tags()
    loss = [(e.step, e.value) for e in events.Scalars("train/loss")]
    assert [step for step, _ in loss] == [1, 2, 3, 4]
    st = status(workdir, e2e_env, *tb)
    # the log prints each value with 4 significant digits (transformers' PrinterCallback)
    assert [f"{v:.4g}" for _, v in loss] == [f"{x:.4g}" for x in st["metrics"]["curve"]["loss"]]
    ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *tb)


@private_pid_namespace
def test_apply_while_active_is_noop_or_replace_never_a_duplicate(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    first = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *LONG)
    assert first.returncode == 0, first.stdout + first.stderr
    pid = supervisor_pid(workdir)
    assert alive(pid)
    assert status(workdir, e2e_env, *LONG)["phase"] in ("Pending", "Running")

    plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", *LONG)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    again = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *LONG)
    assert again.returncode == 0 and "Apply complete: nothing changed." in again.stdout
    assert supervisor_pid(workdir) == pid
    assert len(wait_for(lambda: training_processes(workdir), 120, "the training")) == 1

    changed = (*LONG, "--set", "training.learning_rate=2.0e-3")
    plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", *changed)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "must be replaced" in plan.stdout and "learning rate 0.01 -> 0.002" in plan.stdout
    assert "is stopped first" in plan.stdout
    replaced = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *changed)
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    new_pid = supervisor_pid(workdir)
    assert new_pid != pid and not alive(pid)
    assert len(wait_for(lambda: training_processes(workdir), 120, "the new training")) == 1

    gone = ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *changed)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert new_pid is not None and not alive(new_pid)
    assert training_processes(workdir) == []  # the whole process group stopped


@private_pid_namespace
def test_ftspec_killed_mid_run_then_status_is_still_right(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    with measure("local_run_outliving_ftspec", workdir):
        proc = subprocess.Popen([FTSPEC, "apply", str(SPEC), "--auto-approve", "--wait", *LONG],
                                cwd=workdir, env=e2e_env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        wait_for(lambda: has_step(workdir), 300, "the first training step")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        pid = supervisor_pid(workdir)
        assert alive(pid)  # the run outlives ftspec
        st = status(workdir, e2e_env, *LONG)
        assert st["phase"] == "Running" and st["platform"]["pid"] == pid, st
        plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", *LONG)
        assert plan.returncode == 0, plan.stdout  # no duplicate planned
        final = wait_for(lambda: (s := status(workdir, e2e_env, *LONG))["phase"] in (
            "Succeeded", "Failed") and s, 600, "the run's end")
    assert final["phase"] == "Succeeded", final
    assert final["platform"]["exit_code"] == 0 and math.isfinite(final["metrics"]["final_loss"])
    assert final["metrics"]["step"] == 80  # 5 epochs of 64 rows / 4


@private_pid_namespace
def test_training_process_killed_gives_failed_with_exit_code_and_log_tail(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *LONG)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    wait_for(lambda: has_step(workdir), 300, "the first training step")
    child = json.loads((workdir / RUN_DIR / "child.json").read_text())
    os.kill(child["pid"], signal.SIGKILL)
    st = wait_for(lambda: (s := status(workdir, e2e_env, *LONG))["phase"] == "Failed" and s,
                  60, "Failed")
    assert st["platform"]["exit_code"] == -9 and st["platform"]["signal"] == "SIGKILL", st
    assert "killed by SIGKILL" in st["message"]
    assert not st["platform"]["stopped_by_ftspec"]
    tail = st["platform"]["log_tail"]
    assert tail and any("Loss: " in line for line in tail), tail
    plan = ftspec(workdir, e2e_env, "plan", str(SPEC), "--detailed-exitcode", *LONG)
    assert plan.returncode == 2 and "must be replaced" in plan.stdout, plan.stdout
    assert "killed by SIGKILL" in plan.stdout
    ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *LONG)


@private_pid_namespace
def test_cpu_traps_refused_or_avoided(workdir: Path, e2e_env: dict[str, str]) -> None:
    two = ("--set", "resources.processes_per_node=2", "--set", "training.global_batch_size=8",
           "--set", "training.max_steps=4")
    refused = ftspec(workdir, e2e_env, "plan", str(SPEC), *two)
    assert refused.returncode == 1
    assert "torchtune's distributed recipes need CUDA" in refused.stderr, refused.stderr
    assert "processes_per_node" in refused.stderr and "Traceback" not in refused.stderr

    acc = ("--set", "launcher=accelerate", "--set", "method.lora.output=false", *two)
    with measure("local_accelerate_2proc", workdir):
        applied = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", "--wait", *acc)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    log = (workdir / RUN_DIR / "train.log").read_text()
    # not two lonely world-size-1 runs: 4 steps of 8 rows (4 per process) are half an epoch
    assert summary(log).epoch == 0.5 and len(train_records(log)) == 4, log[-3000:]
    st = status(workdir, e2e_env, *acc)
    assert st["phase"] == "Succeeded" and math.isfinite(st["metrics"]["final_loss"])


@private_pid_namespace
def test_apply_killed_while_starting_never_runs_twice_and_a_deleted_folder_still_stops(
        workdir: Path, e2e_env: dict[str, str]) -> None:
    """`apply` SIGKILLed as soon as its run's supervisor exists (before its final record):
    the next `apply` records that run instead of starting a second one. Then the run folder
    is deleted while the run trains: `destroy` still stops it (identity comes from the OS)."""
    proc = subprocess.Popen([FTSPEC, "apply", str(SPEC), "--auto-approve", *LONG], cwd=workdir,
                            env=e2e_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: (workdir / RUN_DIR / "supervisor.json").exists() or proc.poll() is not None,
             120, "the supervisor")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = json.loads((workdir / STATE).read_text())
    again = ftspec(workdir, e2e_env, "apply", str(SPEC), "--auto-approve", *LONG)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Apply complete: nothing changed." in again.stdout, (first["state"], again.stdout)
    record = json.loads((workdir / STATE).read_text())
    assert record["state"] == "started" and alive(record["supervisor_pid"]), record
    assert len(wait_for(lambda: training_processes(workdir), 120, "the training")) == 1
    supervisors = [p for p in psutil.process_iter(["cmdline"])
                   if "ftspec.reconciler.local.supervise" in (p.info["cmdline"] or [])]
    assert [p.pid for p in supervisors] == [record["supervisor_pid"]]

    shutil.rmtree(workdir / RUN_DIR)
    gone = ftspec(workdir, e2e_env, "destroy", str(SPEC), "--auto-approve", *LONG)
    assert gone.returncode == 0 and "Traceback" not in gone.stderr, gone.stdout + gone.stderr
    assert not alive(record["supervisor_pid"])
    assert wait_for(lambda: training_processes(workdir) == [], 30, "the training to stop")
