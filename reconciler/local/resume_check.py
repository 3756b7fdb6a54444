"""Plan-time check of a local ``training.checkpointing.resume_from`` folder.

Every launcher: the folder exists. torchtune (a LoRA run; ``targets/torchtune_resume``
says what it reads and why): the folder holds the adapter in torchtune's key names, the
recipe state lies beside it, and that recipe state is this epoch's. torchtune keeps one
recipe state per output folder, overwritten after every epoch but the last, so it belongs
to the latest epoch folder whose adapter was written before it (the checkpointer writes the
adapter, then the recipe state): an older epoch folder, or a run's last one, would resume
with another epoch's optimizer and data position.

And on any launcher: a checkpoint inside the applied run's own folder, which apply moves to
its kept generation (``generations``) before the new run starts, is refused with where it
will be kept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from ftspec.reconciler.backend import Desired
from ftspec.reconciler.local import generations
from ftspec.reconciler.local.state import StateStore
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity
from ftspec.spec.ir import Job
from ftspec.spec.urls import is_uri, scheme
from ftspec.targets.paths import local_path
from ftspec.targets.torchtune_resume import ADAPTER_FILE, recipe_state_path

WHERE: KeyPath = ("training", "checkpointing", "resume_from")
_EPOCH = re.compile(r"^epoch_(\d+)$")

Report = Callable[[str, str, str], None]
"""(summary, code, hint) of an error at ``resume_from``."""


def check_resume(job: Job, folder: Path, report: Report) -> None:
    """Report what is wrong with the checkpoint folder ``folder`` for ``job``."""
    if not folder.is_dir():
        report(f"the checkpoint folder {folder} does not exist", "missing",
               "point resume_from at a checkpoint an earlier run saved")
        return
    if job.spec.launcher != "torchtune" or job.spec.method.kind == "full":
        return
    adapter = folder / ADAPTER_FILE
    if not adapter.is_file():
        report(f"the checkpoint folder {folder} has no {ADAPTER_FILE}: torchtune resumes a "
               "LoRA run from the adapter its checkpointer saves in each epoch folder",
               "resume-no-adapter", "point resume_from at an epoch_N folder of an earlier "
               "torchtune LoRA run (its output folder holds them)")
        return
    state = Path(recipe_state_path(str(folder)))
    if not state.is_file():
        report(f"no recipe state at {state}: torchtune saves it beside the epoch folders "
               "after every epoch but a run's last (optimizer, data position, epochs run)",
               "resume-no-state", "resume from an epoch folder of a run that trained more "
               "epochs after it (a finished run's last epoch cannot be resumed)")
        return
    _same_epoch(folder, adapter, state, report)


def _same_epoch(folder: Path, adapter: Path, state: Path, report: Report) -> None:
    match = _EPOCH.match(folder.name)
    if match is None:
        return
    written = state.stat().st_mtime_ns
    if adapter.stat().st_mtime_ns > written:
        report(f"{folder.name} is the last epoch its run saved: the recipe state {state} is "
               "an earlier epoch's (torchtune saves none after a run's last epoch)",
               "resume-last-epoch", "resume from an earlier epoch folder, or start a new run "
               "with more epochs")
        return
    epoch = int(match.group(1))
    later = sorted(int(m.group(1)) for p in folder.parent.iterdir()
                   if (m := _EPOCH.match(p.name)) and int(m.group(1)) > epoch
                   and (p / ADAPTER_FILE).is_file()
                   and (p / ADAPTER_FILE).stat().st_mtime_ns <= written)
    if later:
        report(f"the recipe state {state} is epoch_{later[-1]}'s, not {folder.name}'s "
               "(torchtune keeps the latest epoch's only)", "resume-other-epoch",
               f"resume from {folder.parent / f'epoch_{later[-1]}'}")


def moved_by_apply(desired: Desired, run_dir: str, store: StateStore) -> list[Diagnostic]:
    """An error when ``resume_from`` lies inside ``run_dir``, the folder of the run this
    spec applied, which apply keeps as the next generation (moved away) before it starts
    the new run."""
    value = desired.job.spec.training.checkpointing.resume_from
    if not value or (is_uri(value) and scheme(value) != "file"):
        return []
    path = local_path(value) if is_uri(value) else value
    if os.path.isabs(path) and not os.path.isabs(run_dir):  # as the run folder is: relative
        found = PurePosixPath(os.path.normpath(path))
        root = PurePosixPath(os.path.normpath(store.root))
        path = str(found.relative_to(root)) if found.is_relative_to(root) else path
    if not generations.inside(run_dir, path):
        return []
    number = generations.next_number(store, desired.job.spec_id)
    kept = PurePosixPath(store.dir.relative_to(store.root), generations.HISTORY,
                         desired.job.spec_id, str(number))
    rest = PurePosixPath(os.path.normpath(path)).relative_to(os.path.normpath(run_dir))
    span = desired.doc.span_of(WHERE) if desired.doc is not None else None
    return [Diagnostic(
        Severity.ERROR, f"the checkpoint {path} lies in this run's own folder {run_dir}, "
        f"which apply keeps as {kept} before the new run starts: the launcher would not "
        "find it", path=WHERE, span=span, code="preflight.resume-moved",
        hint=f"run `ftspec destroy` on this spec first (it keeps the folder as {kept}), "
        f"then resume from file://{kept / rest}")]
