"""Every command runs in the project root (``ftspec.reconciler.project.find_root``).

Like git, ftspec moves to the root before a command works, and keeps the meaning of the
paths the user typed: each path argument and option (``click.Path``), read against the
folder the command was started in, is rewritten relative to the root first. The engine
then finds the state, the run folders and the spec's relative ``file://`` inputs from the
working directory as before, whichever subfolder the command was typed in.

When the root is not the folder the command was started in (found above it, or named by
``-C``), one line on stderr says which root is used; ``--json`` output is unchanged.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

UNROOTED = frozenset({"version", "schema", "completion", "validate", "compile", "import"})
"""Commands that read no project state (a file in, a file or report out; the pre-commit
hook's ``validate``): no walk, no line, paths shown as typed."""


def _moved(value: Any, started: str, root: str) -> Any:
    """A path value typed in ``started``, as a path relative to ``root``."""
    if isinstance(value, tuple):
        return tuple(_moved(v, started, root) for v in value)
    if not isinstance(value, str | Path) or str(value) in ("", "-") or \
            os.path.isabs(value):
        return value
    text = os.path.relpath(os.path.join(started, os.fspath(value)), root)
    return Path(text) if isinstance(value, Path) else text


def announce(message: str) -> None:
    from ftspec.spec.text import escape_text

    click.echo(escape_text(message), err=True)


def enter_root(chdir: str | None) -> tuple[str, str] | None:
    """Move to the project root; (the folder the command started in, its root) when they
    differ, None when the working directory is the root."""
    from ftspec.reconciler.project import find_root

    started = os.getcwd()
    found = find_root(Path(started))
    for warning in found.warnings:
        announce(f"warning: {warning}")
    root = str(found.path)
    if root == started and chdir is None:
        return None
    how = "found above the working directory" if root != started else "-C"
    announce(f"project root: {root} ({how})")
    os.chdir(root)
    return started, root


def rooted(command: click.Command) -> click.Command:
    """``command`` running in the project root, its path parameters kept meaning the same
    files (wraps its callback once)."""
    callback = command.callback
    if command.name in UNROOTED or callback is None or getattr(callback, "rooted", False):
        return command
    paths = {p.name for p in command.params
             if isinstance(p.type, click.Path) and p.expose_value and p.name}
    inner: Callable[..., Any] = callback

    @functools.wraps(inner)
    def run(**kwargs: Any) -> Any:
        obj = click.get_current_context().find_object(dict) or {}
        before = os.getcwd()
        moved = enter_root(obj.get("chdir"))
        if moved is None:
            return inner(**kwargs)
        started, root = moved
        try:
            kwargs = {k: _moved(v, started, root) if k in paths else v
                      for k, v in kwargs.items()}
            return inner(**kwargs)
        finally:
            os.chdir(before)

    run.rooted = True  # type: ignore[attr-defined]
    command.callback = run
    return command
