"""`ftspec apply SPEC...` or `ftspec apply --plan FILE`: make the live objects match.

Specs are planned and the plan confirmed (unless --auto-approve). A saved plan is applied
only when named as one (`--plan FILE`): bound to its specs first (`reconciler.bound`), then
applied without a prompt, as Terraform applies a reviewed plan. A spec argument that holds
a saved plan is refused, never taken for a plan."""

from __future__ import annotations

from pathlib import Path

import click
from ftspec.cli.live import connection_options
from ftspec.cli.specs import replace_option, spec_options


@click.command("apply")
@click.argument("specs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--plan", "plan_file", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Apply exactly the saved plan FILE (from `ftspec plan --out "
              "FILE`) once its specs still compile to it.")
@spec_options
@connection_options
@replace_option
@click.option("--auto-approve", is_flag=True, help="Skip the confirmation prompt.")
@click.option("--force-conflicts", is_flag=True,
              help="Take over fields another field manager owns (server-side apply force).")
@click.option("--wait", "wait", is_flag=True,
              help="Follow the job to its end; exit non-zero if it fails.")
@click.option("--timeout", type=float, default=None, help="Give up waiting after SECONDS.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("-v", "--verbose", is_flag=True,
              help="Show every attribute of a created object in the plan (the whole "
              "generated launcher files).")
def command(specs: tuple[Path, ...], plan_file: Path | None, overlays: tuple[Path, ...],
            sets: tuple[str, ...], kubeconfig: str | None, context: str | None,
            namespace: str | None, replacing: tuple[str, ...], auto_approve: bool,
            force_conflicts: bool, wait: bool, timeout: float | None, as_json: bool,
            verbose: bool) -> int:
    """Apply SPECS (planning first), or exactly the saved plan named by --plan."""
    from ftspec.cli.apply_flow import run_apply

    return run_apply(specs, overlays, sets, plan_file=plan_file, kubeconfig=kubeconfig,
                     context=context, namespace=namespace, auto_approve=auto_approve,
                     force_conflicts=force_conflicts, wait=wait, timeout=timeout,
                     as_json=as_json, destroy=False, replacing=replacing, verbose=verbose)
