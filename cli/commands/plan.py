"""`ftspec plan SPEC...`: what apply would change, Terraform-style (or --json)."""

from __future__ import annotations

from pathlib import Path

import click
from ftspec.cli.live import connection_options
from ftspec.cli.pricing import pricing_option
from ftspec.cli.specs import replace_option, spec_options


@click.command("plan")
@click.argument("specs", nargs=-1, required=True, type=click.Path(path_type=Path))
@spec_options
@connection_options
@replace_option
@click.option("--out", "out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Save the plan to FILE (any name, written 0600); `ftspec apply --plan FILE` "
              "applies exactly it, `ftspec show FILE` prints it.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (see "
              "reconciler/README.md for the format).")
@click.option("--detailed-exitcode", is_flag=True,
              help="Exit 0 when there are no changes, 2 when there are, 1 on errors.")
@click.option("-v", "--verbose", is_flag=True,
              help="Show every attribute of a created object (the whole generated launcher "
              "files), each run of a sweep on its own.")
@pricing_option
@click.option("--check-data", is_flag=True,
              help="Check every row of the local datasets (nulls, missing columns, wrong "
              "types), not only the first ones; each problem at its spec field.")
def command(specs: tuple[Path, ...], overlays: tuple[Path, ...], sets: tuple[str, ...],
            kubeconfig: str | None, context: str | None, namespace: str | None,
            replacing: tuple[str, ...], out: Path | None, as_json: bool,
            detailed_exitcode: bool, verbose: bool, check_data: bool,
            pricing: Path | None) -> int:
    """Compare SPECS with the live objects and show the changes apply would make."""
    from ftspec.cli.live import CommandFailed, prepare_specs, report_error
    from ftspec.cli.pricing import read_prices
    from ftspec.reconciler import engine
    from ftspec.reconciler.backend import BackendError

    try:
        prices = read_prices(pricing)
        backend, desired = prepare_specs(specs, overlays, sets, namespace, kubeconfig, context,
                                         check_data=check_data)
        plan = engine.plan(backend, desired, replacing)
    except CommandFailed as exc:
        return exc.code
    except BackendError as exc:
        report_error(exc)
        return 1
    from ftspec.cli.plan_estimate import plan_estimate
    from ftspec.reconciler.saved import plan_document, save_plan

    view = plan.to_json()
    estimate = plan_estimate(desired, view["changes"], prices)

    if out is not None:
        from dataclasses import replace

        from ftspec.cli.output import write_error

        plan = replace(plan, inputs={
            "specs": [str(p.resolve()) for p in specs],
            "overlays": [str(p.resolve()) for p in overlays], "sets": list(sets),
            "namespace": namespace, "replace": list(replacing)})
        try:
            save_plan(plan, out)
        except OSError as exc:
            raise write_error(out, exc) from None
    if as_json:
        from ftspec.cli.output import emit_json

        emit_json(plan_document(plan, estimate=estimate))
    else:
        from ftspec.cli.output import print_markup
        from ftspec.cli.render_plan import render_plan

        if estimate is not None:
            view["estimate"] = estimate
        print_markup(render_plan(view, saved_to=str(out) if out else None, verbose=verbose))
    if detailed_exitcode and plan.has_changes:
        return 2
    return 0
