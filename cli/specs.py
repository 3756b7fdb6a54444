"""Reading specs for a command: file + overlays (-f) + --set, validated, built into Jobs.

Every command that reads a spec uses ``spec_options`` and ``load_jobs`` so overrides and
error reporting behave the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from ftspec.spec.diagnostics import Diagnostics, SpecError
from ftspec.spec.validate import SchemaMode, Validated

F = TypeVar("F", bound=Callable[..., Any])


def spec_options(func: F) -> F:
    """``-f/--values OVERLAY`` (repeatable) and ``--set KEY.PATH=VALUE`` (repeatable)."""
    func = click.option(
        "--set", "sets", multiple=True, metavar="KEY.PATH=VALUE",
        help="Override one spec value (YAML scalar; list items by index). Repeatable.",
    )(func)
    func = click.option(
        "-f", "--values", "overlays", multiple=True, type=click.Path(path_type=Path),
        help="Merge a partial spec over the file (dev/prod variants). Repeatable.",
    )(func)
    return func


@dataclass(frozen=True)
class LoadedSpec:
    path: Path
    validated: Validated

    @property
    def ok(self) -> bool:
        return self.validated.ok


def load_spec(path: Path, overlays: tuple[Path, ...] = (), sets: tuple[str, ...] = (),
              schema: SchemaMode = "always") -> LoadedSpec:
    """``schema="on-error"`` (live commands): see ``ftspec.spec.validate``."""
    from ftspec.spec.loader import load_spec_file
    from ftspec.spec.overrides import apply_overlay, apply_sets
    from ftspec.spec.validate import validate_doc

    try:
        doc = load_spec_file(path)
        for overlay in overlays:
            doc = apply_overlay(doc, load_spec_file(overlay))
        if sets:
            doc = apply_sets(doc, list(sets))
    except SpecError as exc:
        return LoadedSpec(path, Validated(None, None, Diagnostics(list(exc.diagnostics))))
    return LoadedSpec(path, validate_doc(doc) if schema == "always" else validate_doc(doc, schema))
