"""``--pricing FILE``: the user's prices per device-hour for ``plan`` and ``explain``
(``ftspec.compiler.pricing`` reads the file; ftspec ships no prices)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def pricing_option(func: F) -> F:
    return click.option(
        "--pricing", "pricing", type=click.Path(path_type=Path, dir_okay=False), default=None,
        metavar="FILE", help="YAML of accelerator: price per device-hour (e.g. "
        "'nvidia-h100-80gb: 2.49'); the time estimate then gives a cost.",
    )(func)


def read_prices(path: Path | None) -> dict[str, float] | None:
    """The prices in ``path`` (None without one); a wrong file is reported at its
    file:line:col and ends the command (``CommandFailed``)."""
    if path is None:
        return None
    from ftspec.cli.live import CommandFailed
    from ftspec.cli.output import print_diagnostics
    from ftspec.compiler.pricing import load_pricing
    from ftspec.spec.diagnostics import SpecError

    try:
        return load_pricing(path)
    except SpecError as exc:
        print_diagnostics(exc.diagnostics, err=True)
        raise CommandFailed(1) from None
