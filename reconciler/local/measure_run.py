"""The measured properties of a local run (``reconciler.measured``), computed once after it
ended and kept beside it in ``<run_dir>/measured.json`` (tied to the run's start time, so a
new run of the spec is measured anew).

torchtune runs need their dataset's real token count: ``tokens.py`` is run with ftspec's own
interpreter (the one that ran the launcher) on the run's config, in a child process, so the
CLI never imports torch. A count that fails leaves the token figures out and says why.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, TypeGuard

from ftspec.reconciler.local.observe import TERMINAL, RunView
from ftspec.reconciler.local.state import guarded, open_run_dir
from ftspec.reconciler.local.supervise import EXIT_FILE, read_json, write_json
from ftspec.reconciler.logread import read_tail
from ftspec.reconciler.measured import measure
from ftspec.reconciler.progress import track_text, tracker_settings
from ftspec.spec.ir import Job
from ftspec.spec.safe_files import SafeDir

MEASURED_FILE = "measured.json"
_LOG_BYTES = 64 << 20
_COUNT_TIMEOUT_S = 600.0


def _dataset_tokens(root: Path, run_dir: Path) -> tuple[dict[str, int] | None, str | None]:
    configs = sorted((run_dir / "launch").glob("*.yaml"))
    if not configs:
        return None, "no torchtune config in the run's launch folder"
    try:
        done = subprocess.run([sys.executable, "-m", "ftspec.reconciler.local.tokens",
                               str(configs[0])], cwd=root, capture_output=True, text=True,
                              timeout=_COUNT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"counting the dataset's tokens failed: {exc}"
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (ValueError, IndexError):
        data = None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), int)
                                             for k in ("rows", "tokens")):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"counting the dataset's tokens failed: {tail}"
    return {"rows": int(data["rows"]), "tokens": int(data["tokens"])}, None


def measured(job: Job, view: RunView, root: Path) -> dict[str, Any]:
    """The run's measured properties; empty while it runs."""
    if view.phase not in TERMINAL:
        return {}
    record = view.record
    run_dir = root / record.run_dir
    with guarded(run_dir, "read"):
        run = open_run_dir(root, record.run_dir)
    if run is None:
        return {}
    with run:
        return _measured(job, view, root, run)


def _measured(job: Job, view: RunView, root: Path, run: SafeDir) -> dict[str, Any]:
    record = view.record
    kept = read_json(run, MEASURED_FILE)
    if kept is not None and kept.get("started_at") == record.started_at:
        return {k: v for k, v in kept.items() if k != "started_at"}
    text = read_tail(root / record.log, _LOG_BYTES)
    tracker = track_text(text, **tracker_settings(job))
    dataset = note = None
    if not job.launcher_facts.logs_tokens and tracker.tokens_seen() is None and tracker.last:
        dataset, note = _dataset_tokens(root, root / record.run_dir)
    ended = read_json(run, EXIT_FILE) or {}
    rss = ended.get("max_rss_kib")
    rss_kib = rss if _kib(rss) else None
    validity = "ok" if view.phase.value == "Succeeded" else view.reason.get("validity", "failed")
    out = measure(text, tracker, validity=validity, devices=job.world_size,
                  global_batch=job.global_batch_size, dataset=dataset,
                  max_rss_bytes=None if rss_kib is None else rss_kib * 1024)
    if note:
        out["dataset_tokens_how"] = note
    with guarded(root / record.run_dir):
        write_json(run, MEASURED_FILE, {**out, "started_at": record.started_at})
    return out


def _kib(value: Any) -> TypeGuard[int]:
    """A peak RSS as the supervisor records it (``exit.json`` is read back untrusted)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 40
