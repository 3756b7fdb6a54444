"""Shared pieces of the local-state attack tests: a project with the quickstart spec, a
forged or real run record, a bystander process, a real supervisor of a ``sleep``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from ftspec.reconciler import engine
from ftspec.reconciler.backend import Reporter
from ftspec.reconciler.local.backend import PREFIX, LocalBackend
from ftspec.reconciler.model import Action, ApplyResult, Change, Plan

REPO = Path(__file__).resolve().parents[2]
SPEC = "examples/tiny-local.yaml"
SPEC_ID = "tiny-local"
RUN_DIR = f".ftspec/runs/{SPEC_ID}"
RECORD = Path(f".ftspec/local/{SPEC_ID}.json")


ASSETS_ENV = "FTSPEC_TEST_TINY_ASSETS"
"""Where the tiny model, tokenizer and dataset are generated once (an inner pytest in a
private PID namespace inherits it and reuses them)."""


def _tiny_assets() -> Path:
    from ftspec.reconciler.local.tiny import generate_tiny_assets

    shared = os.environ.get(ASSETS_ENV)
    dest = Path(shared) if shared else Path(tempfile.mkdtemp(prefix="ftspec-tiny-")) / "llama2"
    os.environ[ASSETS_ENV] = str(dest)
    return generate_tiny_assets(dest, family="llama2").dataset_path.parent


def project(root: Path) -> Path:
    """A working directory holding the quickstart spec and the files it reads, linked in at
    ``tiny/llama2`` (outside ``.ftspec``: the plan's preflight finds them, and ``.ftspec``
    holds nothing but the state the tests attack)."""
    (root / "examples").mkdir(parents=True)
    (root / "tiny").mkdir()
    (root / "tiny" / "llama2").symlink_to(_tiny_assets(), target_is_directory=True)
    text = (REPO / SPEC).read_text(encoding="utf-8")
    (root / SPEC).write_text(text.replace("file://.ftspec/tiny/", "file://tiny/"),
                             encoding="utf-8")
    return root


def bystander() -> psutil.Popen:
    """A process that is not ftspec's: its own session leader, this user's, alive."""
    proc = psutil.Popen(["sleep", "300"], start_new_session=True)
    return proc


def record_for(pid: int, create_time: float, **changes: Any) -> dict[str, Any]:
    """A record as ftspec writes it for the quickstart spec, naming ``pid``."""
    data: dict[str, Any] = {
        "spec_id": SPEC_ID, "spec_hash": "0000000000000000", "spec_file": SPEC,
        "launcher": "torchtune", "argv": ["tune", "run"], "env": {}, "cwd": "/",
        "run_dir": RUN_DIR, "log": f"{RUN_DIR}/train.log", "started_at": create_time,
        "supervisor_pid": pid, "supervisor_create_time": create_time, "pgid": pid,
        "summary": {}, "version": 1, "state": "started"}
    data.update(changes)
    return data


def plant_record(root: Path, data: Any) -> Path:
    path = root / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def ended_run(root: Path, log: str, returncode: int = 0) -> Path:
    """A project at ``root`` holding the quickstart spec and its local run, ended with
    ``returncode`` and ``log`` as its log (the record names a pid no process has)."""
    (root / "examples").mkdir()
    shutil.copy(REPO / SPEC, root / SPEC)
    run = root / RUN_DIR
    run.mkdir(parents=True)
    (run / "train.log").write_text(log)
    (run / "exit.json").write_text(json.dumps({"returncode": returncode,
                                               "ended_at": time.time()}))
    plant_record(root, record_for(2**22 - 7, time.time()))
    return root


def run_cli(args: list[str]) -> tuple[int, str]:
    """``ftspec ARGS`` in this process (the working directory is the project)."""
    from ftspec.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue() + err.getvalue()


class Events:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def event(self, message: str, **fields: Any) -> None:
        self.lines.append(message)

    def __str__(self) -> str:
        return "\n".join(self.lines)


def sleep_after(spec_id: str = SPEC_ID, seconds: int = 300) -> dict[str, Any]:
    """What a plan's ``after`` holds for a local run, its command a ``sleep``."""
    run_dir = f".ftspec/runs/{spec_id}"
    return {"spec_id": spec_id, "spec_hash": "1111111111111111", "spec_file": SPEC,
            "launcher": "torchtune", "summary": {}, "argv": ["sleep", str(seconds)],
            "files": {"config.yaml": "a: 1\n"}, "env": {}, "run_dir": run_dir,
            "log": f"{run_dir}/train.log", "notes": []}


def apply_change(backend: LocalBackend, action: Action, after: dict[str, Any] | None,
                 reporter: Reporter | None = None, spec_id: str = SPEC_ID) -> ApplyResult:
    addr = PREFIX + spec_id
    plan = Plan(backend="local", changes=(Change(addr, action, None, after, reason="test"),),
                read_digests={addr: backend.store.digest(spec_id)}, specs={})
    return engine.apply(backend, plan, reporter or Events())


def supervise(root: Path, run_dir: str, argv: list[str]) -> None:
    """Start a supervisor the way the backend does (detached; returns once recorded)."""
    subprocess.run([sys.executable, "-m", "ftspec.reconciler.local.supervise",
                    str(root / run_dir), "--", *argv], cwd=root, check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False
