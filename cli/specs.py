"""The spec options every command takes: ``-f/--values`` overlays and ``--set``.

What they do is the one compile path's business (``ftspec.compiler.pipeline``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def spec_options(func: F, *, short: bool = True) -> F:
    """``-f/--values OVERLAY`` (repeatable) and ``--set KEY.PATH=VALUE`` (repeatable);
    ``short=False``: ``--values`` only (``logs`` gives ``-f`` to ``--follow``, as kubectl)."""
    func = click.option(
        "--set", "sets", multiple=True, metavar="KEY.PATH=VALUE",
        help="Override one spec value (YAML scalar; list items by index). Repeatable.",
    )(func)
    func = click.option(
        *(("-f", "--values") if short else ("--values",)), "overlays", multiple=True,
        type=click.Path(path_type=Path),
        help="Merge a partial spec over the file (dev/prod variants). Repeatable.",
    )(func)
    return func


def replace_option(func: F) -> F:
    """``--replace ADDRESS`` (repeatable): plan that run again though nothing changed."""
    return click.option(
        "--replace", "replacing", multiple=True, metavar="ADDRESS",
        help="Run ADDRESS again although nothing changed (as Terraform's -replace); "
        "repeatable. The addresses are the plan's (e.g. local.run.NAME).",
    )(func)
