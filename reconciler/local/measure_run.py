"""The measured properties of a local run (``reconciler.measured``), computed once after it
ended and kept beside it in ``<run_dir>/measured.json`` (tied to the run's start time, so a
new run of the spec is measured anew).

torchtune runs need their dataset's real token count: ``tokens.py`` is run with ftspec's own
interpreter (the one that ran the launcher), in a child process, so the CLI never imports
torch. It is given the config the spec compiles to now, on its standard input, and only
when the run's own launch file is that config (compared as ``plan`` compares them): a file
in the run's folder is never handed to torchtune's loader, which would instantiate any
component it names. A count that fails leaves the token figures out and says why.

``resources``: the supervisor's ``usage.json`` (``reconciler.usage``), checked field by field
each time it is read and never copied into ``measured.json`` (whose kept figures are
returned as they were kept).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeGuard

from ftspec.reconciler.backend import NullReporter, Reporter
from ftspec.reconciler.failure import describe
from ftspec.reconciler.local.compare import same_file
from ftspec.reconciler.local.observe import TERMINAL, RunView
from ftspec.reconciler.local.runner import launch_file
from ftspec.reconciler.local.state import guarded, open_run_dir
from ftspec.reconciler.local.supervise import EXIT_FILE, USAGE_FILE, read_json, write_json
from ftspec.reconciler.logread import read_tail
from ftspec.reconciler.measured import measure
from ftspec.reconciler.pace import duration
from ftspec.reconciler.progress import track_text, tracker_settings
from ftspec.reconciler.usage import parse_usage
from ftspec.spec.ir import Job
from ftspec.spec.safe_files import SafeDir

Files = Callable[[], Mapping[str, str]]
MEASURED_FILE = "measured.json"
_LOG_BYTES = 64 << 20
_COUNT_TIMEOUT_S = 600.0
_COUNTS: dict[str, dict[str, int]] = {}
"""Token counts made in this process, by ``_count_key``."""


def _counted(job: Job, root: Path, run_dir: str, compiled_files: Files, reporter: Reporter
             ) -> tuple[dict[str, int] | None, str | None]:
    """The run's dataset tokens, said to ``reporter`` as the count starts and ends: a count
    builds the run's tokenizer and dataset in a child process (seconds to minutes), once per
    run, and once per process for runs that read the same tokenizer and data (a sweep's
    points)."""
    compiled, note = _config_ran(root, run_dir, compiled_files)
    if compiled is None:
        return None, note
    name = job.name
    key = _count_key(root, compiled)
    if key in _COUNTS:
        dataset: dict[str, int] | None = dict(_COUNTS[key])
        reporter.event(f"{name}: {_COUNTS[key]['tokens']} tokens in {_COUNTS[key]['rows']} "
                       "rows, as counted for a run with the same tokenizer and data",
                       measuring=name)
        return dataset, None
    reporter.event(f"{name}: counting the dataset's tokens with the run's tokenizer "
                   "(once per run, kept beside it)", measuring=name)
    began = time.monotonic()
    dataset, note = _count(root, compiled)
    took = duration(time.monotonic() - began)
    if dataset is not None:
        _COUNTS[key] = dict(dataset)
    reporter.event(f"{name}: {dataset['tokens']} tokens in {dataset['rows']} rows, counted "
                   f"in {took}" if dataset else f"{name}: tokens not counted ({took})",
                   measuring=name)
    return dataset, note


def _config_ran(root: Path, run_dir: str, compiled_files: Files
                ) -> tuple[str | None, str | None]:
    """The torchtune config the spec compiles to now, when the run's own launch file is
    that config; else None and why its tokens are not counted."""
    try:
        files = compiled_files()
    except (ValueError, KeyError, OSError) as exc:
        return None, f"the spec's torchtune config could not be compiled here: {exc}"
    configs = sorted(name for name in files if name.endswith(".yaml"))
    if not configs:
        return None, "the spec compiles to no torchtune config"
    compiled = files[configs[0]]
    ran = launch_file(root, run_dir, configs[0])
    if ran is None or not same_file(ran, compiled):
        return None, ("the run's config is not the one the spec compiles to now (the spec "
                      "changed since the run, or its launch file is gone); its dataset's "
                      "tokens are not counted")
    return compiled, None


def _count_key(root: Path, compiled: str) -> str:
    """What a count depends on: the config's ``tokenizer`` and ``dataset`` sections (all
    that ``tokens.py`` instantiates) and the size and modification time of every file they
    name (relative to ``root``, the count's working folder). A config that does not parse
    is its own key (its count fails alike)."""
    import yaml

    try:
        loaded = yaml.safe_load(compiled)
    except yaml.YAMLError:
        loaded = None
    if not isinstance(loaded, dict):
        return json.dumps([str(root), compiled])
    sections = {k: loaded.get(k) for k in ("tokenizer", "dataset")}
    stats = []
    for value in _strings(sections):
        try:
            info = (root / value).stat()
        except (OSError, ValueError):
            continue
        stats.append((value, info.st_size, info.st_mtime_ns))
    return json.dumps([str(root), sections, stats], sort_keys=True, default=str)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _count(root: Path, compiled: str) -> tuple[dict[str, int] | None, str | None]:
    """``tokens.py``'s count of ``compiled``'s data, in a child process."""
    try:
        done = subprocess.run([sys.executable, "-m", "ftspec.reconciler.local.tokens"],
                              input=compiled, cwd=root, capture_output=True, text=True,
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


def measured(job: Job, view: RunView, root: Path, files: Files,
             reporter: Reporter | None = None) -> dict[str, Any]:
    """The run's measured properties; empty while it runs. ``files()``: the launcher's
    files as the spec compiles now (the token count reads its config from them, never from
    the run's folder). A first measurement that counts tokens is said to ``reporter``."""
    if view.phase not in TERMINAL:
        return {}
    record = view.record
    run_dir = root / record.run_dir
    with guarded(run_dir, "read"):
        run = open_run_dir(root, record.run_dir)
    if run is None:
        return {}
    with run:
        out = _measured(job, view, root, run, files, reporter or NullReporter())
        usage = parse_usage(read_json(run, USAGE_FILE))
        return {**out, "resources": usage} if usage is not None else out


def _measured(job: Job, view: RunView, root: Path, run: SafeDir, files: Files,
              reporter: Reporter) -> dict[str, Any]:
    record = view.record
    kept = read_json(run, MEASURED_FILE)
    validity = _validity(view)
    if kept is not None and kept.get("started_at") == record.started_at:
        # the validity as read now: one kept by an ftspec that counted no steps said ok
        return {**{k: v for k, v in kept.items()
                   if k not in ("started_at", "resources", *validity)},
                **validity}
    text = read_tail(root / record.log, _LOG_BYTES)
    tracker = track_text(text, **tracker_settings(job))
    dataset = note = None
    if not job.launcher_facts.logs_tokens and tracker.tokens_seen() is None and tracker.last:
        dataset, note = _counted(job, root, record.run_dir, files, reporter)
    ended = read_json(run, EXIT_FILE) or {}
    rss = ended.get("max_rss_kib")
    rss_kib = rss if _kib(rss) else None
    out = measure(text, tracker, validity=validity["validity"], devices=job.world_size,
                  global_batch=job.global_batch_size, dataset=dataset,
                  max_rss_bytes=None if rss_kib is None else rss_kib * 1024)
    if note:
        out["dataset_tokens_how"] = note
    out.update(validity)
    with guarded(root / record.run_dir):
        write_json(run, MEASURED_FILE, {**out, "started_at": record.started_at})
    return out


def _validity(view: RunView) -> dict[str, Any]:
    """``validity`` (``failure``'s classes) and, for a run that exited 0 short of its plan,
    ``validity_reason`` (a failed run's reason is ``status``'s)."""
    validity = view.reason.get("validity") or \
        ("ok" if view.phase.value == "Succeeded" else "failed")
    if not view.reason.get("trained"):
        return {"validity": validity}
    return {"validity": validity, "validity_reason": describe(view.reason)}


def _kib(value: Any) -> TypeGuard[int]:
    """A peak RSS as the supervisor records it (``exit.json`` is read back untrusted)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 40
