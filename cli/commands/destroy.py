"""`ftspec destroy SPEC...`: delete every object these specs own."""

from __future__ import annotations

from pathlib import Path

import click
from ftspec.cli.live import connection_options
from ftspec.cli.specs import spec_options


@click.command("destroy")
@click.argument("specs", nargs=-1, required=True, type=click.Path(path_type=Path))
@spec_options
@connection_options
@click.option("--auto-approve", is_flag=True, help="Skip the confirmation prompt.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def command(specs: tuple[Path, ...], overlays: tuple[Path, ...], sets: tuple[str, ...],
            kubeconfig: str | None, context: str | None, namespace: str | None,
            auto_approve: bool, as_json: bool) -> int:
    """Delete the live objects labelled with these specs' identity."""
    from ftspec.cli.apply_flow import run_apply

    return run_apply(specs, overlays, sets, kubeconfig=kubeconfig, context=context,
                     namespace=namespace, auto_approve=auto_approve, force_conflicts=False,
                     wait=False, timeout=None, as_json=as_json, destroy=True)
