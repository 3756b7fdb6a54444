"""The local run of a Job: the launcher's compiled command, made safe to run on this machine.

The argv is the launcher target's own (carried by its compiled command artifact), unchanged
but for two things: references to the launcher's files (``--config torchtune.yaml``) point at
their copy under the run directory, and a bare program name (``tune``, ``accelerate``) is
resolved next to the running Python first, so an un-activated virtualenv still works.

CPU traps, checked before anything starts (documented in reconciler/README.md):
- accelerate ``MULTI_CPU`` with more than one process silently trains in ONE process (it needs
  MPI): refused. ``MULTI_GPU``/``FSDP`` configs on a CPU spec get ``ACCELERATE_USE_CPU=true``;
  without it every torchrun worker trains alone (world size 1) and nothing says so.
  ``DEEPSPEED`` needs GPUs and the deepspeed package: refused on CPU.
- torchtune 0.6.1's distributed recipes (``--nproc-per-node`` > 1) require CUDA (NCCL process
  group, GPU memory stats): refused on a CPU spec, with the fix.
- A spec asking for GPUs on a machine without an NVIDIA device: refused.
"""

from __future__ import annotations

import glob
import importlib
import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError, Desired
from ftspec.targets.base import Launch, launch_of
from ftspec.targets.embed import relocate

LAUNCH_DIR = "launch"
LOG_NAME = "train.log"


@dataclass(frozen=True)
class LocalLaunch:
    argv: list[str]
    files: dict[str, str]
    env: dict[str, str]
    run_dir: str
    """Relative to the working directory (the state root)."""
    log: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"argv": self.argv, "files": self.files, "env": self.env,
                "run_dir": self.run_dir, "log": self.log, "notes": self.notes}


def launcher_launch(desired: Desired) -> Launch:
    """The launch the launcher's compiled command artifact carries (never recompiled here)."""
    launch = launch_of(desired.artifacts)
    if launch is None:
        raise BackendError(f"{desired.spec_file}: the {desired.job.launcher} target's artifacts "
                           "carry no command to run locally")
    return launch


def compiled_files(desired: Desired) -> dict[str, str]:
    """The launcher's files as the spec compiles now (compiled here when the command read
    its specs for their identity only: ``status``, ``output``)."""
    from ftspec.compiler.dispatch import compile_job, default_target

    launch = launch_of(desired.artifacts) or \
        launch_of(compile_job(desired.job, default_target(desired.job)))
    return dict(launch.files) if launch is not None else {}


def _refuse(desired: Desired, what: str, hint: str) -> BackendError:
    return BackendError(f"{desired.spec_file}: {what}", hint=hint)


def _has_nvidia_device() -> bool:
    return bool(glob.glob("/dev/nvidia[0-9]*"))


def _accelerate_cpu_env(desired: Desired, files: dict[str, str], env: dict[str, str],
                        notes: list[str]) -> None:
    from ruamel.yaml import YAML

    config: dict[str, Any] = {}
    for name, text in files.items():
        if name.endswith((".yaml", ".yml")) and "distributed_type" in text:
            loaded = YAML(typ="safe").load(text)
            config = loaded if isinstance(loaded, dict) else {}
    kind = str(config.get("distributed_type", "NO"))
    procs = int(config.get("num_processes", 1) or 1)
    if kind == "MULTI_CPU" and procs > 1:
        raise _refuse(
            desired, f"accelerate MULTI_CPU with {procs} processes would silently train in "
            "one process here (MULTI_CPU needs an MPI launcher)",
            "ftspec's accelerate target emits MULTI_GPU with use_cpu for CPU specs; "
            "set resources.processes_per_node: 1 or run on GPUs")
    if kind == "DEEPSPEED":
        raise _refuse(desired, "distributed.strategy deepspeed needs GPUs and the deepspeed "
                      "package; this spec trains on CPU",
                      "use distributed.strategy: ddp (or fsdp) for a CPU run")
    env["ACCELERATE_USE_CPU"] = "true"
    if kind != "NO":
        notes.append(f"ACCELERATE_USE_CPU=true: the {kind} config runs its {procs} workers on "
                     "CPU over gloo (without it each worker would train alone)")


PYTHON_PROGRAMS = {"tune": "torchtune._cli.tune", "accelerate": "accelerate.commands.accelerate_cli"}
"""Launchers that are Python console scripts: run with ftspec's own interpreter when no
script of that name sits beside it, so workers import the same packages (ftspec's entrypoint
included) as ftspec does, not those of whatever interpreter a script on PATH names."""


def _resolve_program(name: str) -> list[str]:
    if os.sep in name:
        return [name]
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    module = PYTHON_PROGRAMS.get(name)
    if module is not None and importlib.util.find_spec(module.split(".")[0]) is not None:
        return [sys.executable, "-m", module]
    found = shutil.which(name)
    if found is None:
        extra = {"tune": "torchtune", "accelerate": "accelerate"}.get(name)
        hint = (f"install it: pip install 'ftspec[{extra}]'" if extra
                else "install it or put it on PATH")
        raise BackendError(f"the launcher command {name!r} is not installed", hint=hint)
    return [found]


def prepare(desired: Desired) -> LocalLaunch:
    """The command, files and environment of this spec's local run (raises when unsafe)."""
    job = desired.job
    launch = launcher_launch(desired)
    files = dict(launch.files)
    env: dict[str, str] = {"PYTHONUNBUFFERED": "1", **launch.env}
    notes: list[str] = []
    if job.device == "cuda" and not _has_nvidia_device():
        raise _refuse(desired, f"the spec asks for {job.total_gpus} GPU(s) but this machine "
                      "has no NVIDIA device", "set resources.gpus_per_node: 0 to train on CPU")
    facts = job.launcher_facts
    if job.device == "cpu" and facts.accelerate_config:
        _accelerate_cpu_env(desired, files, env, notes)
    if job.device == "cpu" and not facts.cpu_multiprocess and job.world_size > 1:
        raise _refuse(
            desired, f"torchtune's distributed recipes need CUDA (NCCL); {job.world_size} "
            "CPU processes would fail at start-up",
            "set resources.processes_per_node: 1 for a CPU run, or use launcher: accelerate")
    env.update(job.spec.deploy.local.env)
    workdir = job.spec.deploy.local.workdir.rstrip("/")
    parts = workdir.split("/")
    if not workdir or workdir.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise _refuse(desired, f"deploy.local.workdir {workdir!r} is not a folder inside the "
                      "working directory (ftspec keeps each run's files there)",
                      "use a relative path without '..', e.g. .ftspec/runs")
    run_dir = f"{workdir}/{job.spec_id}"
    argv = relocate(launch.argv, files, f"{run_dir}/{LAUNCH_DIR}")
    if not argv:
        raise BackendError(f"the {job.launcher} target produced an empty command")
    argv[:1] = _resolve_program(argv[0])
    return LocalLaunch(argv=argv, files=files, env=env, run_dir=run_dir,
                       log=f"{run_dir}/{LOG_NAME}", notes=notes)
