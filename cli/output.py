"""Output helpers shared by commands: plain vs colour, JSON, diagnostics."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from typing import Any

import click
from ftspec.spec.diagnostics import Diagnostic


def use_color(stream: Any = None) -> bool:
    """Colour only on a terminal and never when NO_COLOR is set (https://no-color.org)."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") is not None:
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=False, ensure_ascii=False))


def render_diagnostic(diag: Diagnostic, color: bool) -> str:
    text = diag.format()
    if not color:
        return text
    head, _, rest = text.partition("\n")
    sev = diag.severity.value
    tint = "red" if diag.is_error else "yellow"
    head = head.replace(f": {sev}: ", ": " + click.style(f"{sev}:", fg=tint, bold=True) + " ", 1)
    if rest:
        rest = rest.replace("hint:", click.style("hint:", fg="cyan"))
        return head + "\n" + rest
    return head


def print_diagnostics(diags: Iterable[Diagnostic], *, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    color = use_color(stream)
    for diag in diags:
        click.echo(render_diagnostic(diag, color), err=err)
