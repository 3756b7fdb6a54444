"""`ftspec version`: ftspec's version and those of the launchers and libraries it drives.

Read from the installed distributions' metadata (``importlib.metadata``): nothing is
imported, so it answers in a blink even where importing torch takes seconds.
"""

from __future__ import annotations

import click

PACKAGES = ("ftspec", "torchtune", "torch", "torchao", "accelerate", "transformers", "trl",
            "peft", "datasets", "ray", "kubernetes")


def versions() -> dict[str, str | None]:
    """Distribution -> installed version (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


@click.command("version")
@click.option("--json", "as_json", is_flag=True, help="Print the versions as JSON.")
def command(as_json: bool) -> int:
    """Print ftspec's version and the launchers' (torchtune, accelerate, TRL, ...)."""
    found = versions()
    if as_json:
        from ftspec.cli.output import emit_json

        emit_json(found)
        return 0
    width = max(map(len, found))
    for name, value in found.items():
        click.echo(f"{name:<{width}}  {value or '(not installed)'}")
    return 0
