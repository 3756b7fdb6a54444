"""Kept results: each run of a local job is a generation that a replace or destroy keeps.

A run's folder (``RunRecord.run_dir``: its log, launch files, exit code, measured
properties and, where the spec's output lies inside it as by default, the adapter and
checkpoints) is moved whole, by one rename, to ``.ftspec/history/<spec id>/<n>/`` before a
replace starts the next run or a destroy forgets it, with ``generation.json`` beside it:
the run record as it was (start, argv, applied record, summary), its phase, exit code and
final loss. ``history`` lists them for ``ftspec output --history``. Nothing is copied (a
rename costs nothing whatever the size); a run folder on another file system than
``.ftspec``, or an output folder outside the run folder, is not moved, and ``plan`` says
what the new run writes over (``overwritten``).

Our own code: a few renames under the state folder's link-safe handles
(``spec.safe_files.SafeDir``).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from ftspec.reconciler.local.observe import RunView
from ftspec.reconciler.local.state import StateStore, guarded
from ftspec.spec.safe_files import SafeDir

HISTORY = "history"
INFO_FILE = "generation.json"
MAX_GENERATIONS = 1000


def folder_of(store: StateStore, spec_id: str) -> Path:
    return store.dir / HISTORY / spec_id


def inside(run_dir: str, path: str) -> bool:
    """``path`` (relative to the project root, or absolute) lies inside ``run_dir``."""
    if os.path.isabs(path) != os.path.isabs(run_dir):
        return False
    return PurePosixPath(os.path.normpath(path)).is_relative_to(os.path.normpath(run_dir))


def next_number(store: StateStore, spec_id: str) -> int:
    kept = [g["generation"] for g in history(store, spec_id)]
    return max(kept, default=0) + 1


def keep(store: StateStore, view: RunView) -> str | None:
    """Move the ended run of ``view`` to its generation folder; the folder (relative to the
    project root), or None when there was nothing to keep or it could not be moved (a run
    folder on another file system, a link where the folder should be)."""
    record = view.record
    run = Path(record.run_dir)
    if run.is_absolute() or ".." in run.parts or not run.parts:
        return None
    parent, name = run.parent, run.name
    number = next_number(store, record.spec_id)
    if number > MAX_GENERATIONS:
        return None
    info = {
        "generation": number, "spec_id": record.spec_id, "phase": view.phase.value,
        "exit_code": view.returncode, "signal": view.signal,
        "started_at": record.started_at, "ended_at": view.ended_at,
        "final_loss": view.progress.last.loss if view.progress.last else None,
        "steps": view.progress.last.step if view.progress.last else None,
        "run_dir": record.run_dir, "record": record.to_json(),
    }
    where = store.dir / HISTORY / record.spec_id
    with guarded(where):
        try:
            src = SafeDir.open(store.root, str(parent)) if str(parent) != "." else \
                SafeDir.open(store.root)
        except FileNotFoundError:
            return None
        with src, store.state_dir(f"{HISTORY}/{record.spec_id}", create=True) as dst:
            try:
                st = os.lstat(name, dir_fd=src.fd)
            except FileNotFoundError:
                return None
            if not stat.S_ISDIR(st.st_mode):
                return None
            try:
                os.rename(name, str(number), src_dir_fd=src.fd, dst_dir_fd=dst.fd)
            except OSError as exc:
                if exc.errno in (errno.EXDEV, errno.ENOTEMPTY, errno.EEXIST):
                    return None
                raise
            with dst.sub(str(number)) as kept:
                kept.write(INFO_FILE, json.dumps(info, indent=2, allow_nan=False) + "\n")
    return str(PurePosixPath(store.dir.relative_to(store.root)) / HISTORY / record.spec_id
               / str(number))


def history(store: StateStore, spec_id: str) -> list[dict[str, Any]]:
    """The kept generations of ``spec_id``, oldest first (each ``generation.json`` read as
    data: an entry of the wrong shape is left out)."""
    out: list[dict[str, Any]] = []
    with guarded(folder_of(store, spec_id), "read"):
        try:
            folder = store.state_dir(f"{HISTORY}/{spec_id}")
        except (FileNotFoundError, NotADirectoryError):
            return out
        with folder:
            for name in sorted(os.listdir(folder.fd), key=lambda n: (len(n), n)):
                if not name.isdigit():
                    continue
                try:
                    with folder.sub(name) as kept:
                        raw = kept.read(INFO_FILE, limit=1 << 20)
                except OSError:
                    continue
                entry = _entry(raw, int(name))
                if entry is not None:
                    entry["path"] = str(PurePosixPath(store.dir.relative_to(store.root))
                                        / HISTORY / spec_id / name)
                    out.append(entry)
    return out


def _entry(raw: bytes | None, number: int) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("generation") != number:
        return None
    keys = ("generation", "phase", "exit_code", "signal", "started_at", "ended_at",
            "final_loss", "steps", "run_dir")
    return {k: data.get(k) for k in keys
            if isinstance(data.get(k), (str, int, float, type(None)))}


def plan_note(store: StateStore, run_dir: str, spec_id: str, output: str | None) -> str:
    """What a replace or destroy keeps of the run in ``run_dir``, for the plan's reason."""
    number = next_number(store, spec_id)
    kept = f"{store.dir.name}/{HISTORY}/{spec_id}/{number}"
    note = f"its run folder {run_dir} is kept as generation {number} ({kept})"
    if output and not inside(run_dir, output):
        note += f"; its outputs in {output} lie outside it and are written over"
    return note
