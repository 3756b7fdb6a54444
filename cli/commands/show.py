"""`ftspec show PLAN`: print a saved plan (as `terraform show` does), or --json."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("show")
@click.argument("plan_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the saved plan's JSON document.")
@click.option("--full", is_flag=True, help="Show every attribute of a created object (the "
              "whole generated launcher files), each run of a sweep on its own.")
def command(plan_file: Path, as_json: bool, full: bool) -> int:
    """Print the saved plan PLAN_FILE (written by `ftspec plan --out`), whatever its name."""
    from ftspec.cli.live import report_error
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.saved import is_saved_plan, load_document, plan_from_json

    try:
        if not is_saved_plan(plan_file):
            raise BackendError(f"{plan_file} is not a saved ftspec plan (it does not start "
                               "with the plan header)",
                               hint="save one with `ftspec plan SPEC --out FILE`")
        doc = load_document(plan_file)
    except BackendError as exc:
        report_error(exc)
        return 1
    if as_json:
        from ftspec.cli.output import emit_json

        emit_json(doc)
        return 0
    from ftspec.cli.output import print_markup
    from ftspec.cli.render_plan import render_plan

    plan = plan_from_json(doc)
    made_by = doc.get("made_by")
    made: dict[str, object] = made_by if isinstance(made_by, dict) else {}
    head = f"Saved plan {plan_file} ({plan.backend} backend"
    if isinstance(made.get("ftspec"), str) and isinstance(made.get("created_at"), str):
        head += f", made by ftspec {made['ftspec']} at {made['created_at']}"
    specs = plan.inputs.get("specs") or list(plan.specs)
    lines = [head + ")", *(f"  spec: {s}" for s in specs)]
    from rich.markup import escape

    print_markup("\n".join(escape(line) for line in lines) + "\n"
                 + render_plan(plan.to_json(), out_hint=False, verbose=full))
    if plan.has_changes:
        print_markup(f"\nTo perform exactly these actions, run:\n    ftspec apply --plan "
                     f"{escape(str(plan_file))}")
    return 0
