"""The project root: the folder whose ``.ftspec/`` holds the local state, found as git finds
its repository.

From the starting folder (the working directory, or the one ``ftspec -C DIR`` names) up to
``/``, the nearest folder holding ``.ftspec/`` is the root; with none anywhere above, the
starting folder is (a first ``apply`` creates ``.ftspec/`` there). The walk stops at a file
system boundary (as git does without ``GIT_DISCOVERY_ACROSS_FILESYSTEM``): a mount above the
project is someone else's tree.

A ``.ftspec`` that is a link, not a folder, or owned by another user is never taken as the
root: anyone who can write a parent folder (``/tmp``, a shared checkout) could otherwise
capture every run started below it. The walk stops there and the starting folder is used,
with a warning naming it; climbing past it to an outer project would be as surprising.

Nothing here prints; the CLI says which root a command uses (``ftspec.cli.project``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

STATE_DIR = ".ftspec"
"""The state folder's name (``reconciler.local.state`` keeps its layout)."""


@dataclass(frozen=True)
class ProjectRoot:
    path: Path
    """The root, an absolute path."""
    found: bool
    """True when a ``.ftspec/`` was found (at the start folder or above it)."""
    warnings: list[str] = field(default_factory=list)


def _problem(entry: Path, st: os.stat_result) -> str | None:
    """Why ``entry`` (a ``.ftspec`` seen by lstat) cannot be the state folder, or None."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != os.geteuid():
        return f"belongs to another user (uid {st.st_uid})"
    return None


def find_root(start: Path) -> ProjectRoot:
    """The project root for commands run in ``start`` (see the module docstring)."""
    here = Path(os.path.abspath(start))
    try:
        device = os.stat(here).st_dev
    except OSError:
        return ProjectRoot(here, False)
    for folder in (here, *here.parents):
        try:
            if os.stat(folder).st_dev != device:
                break
        except OSError:
            break
        entry = folder / STATE_DIR
        try:
            st = os.lstat(entry)
        except FileNotFoundError:
            continue
        except OSError as exc:
            why = f"cannot read {entry}: {exc.strerror or exc}"
            return ProjectRoot(here, False, [f"{why}; using {here} as the project root"])
        problem = _problem(entry, st)
        if problem is not None:
            why = (f"ignoring {entry}: it {problem} (ftspec keeps its state only in a "
                   "folder of yours)")
            return ProjectRoot(here, False, [f"{why}; using {here} as the project root"])
        return ProjectRoot(folder, True)
    return ProjectRoot(here, False)
