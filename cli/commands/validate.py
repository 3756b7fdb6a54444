"""`ftspec validate FILE...`: schema + model + semantic rules, all problems at once."""

from __future__ import annotations

from pathlib import Path

import click
from ftspec.cli.output import emit_json, print_diagnostics


@click.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print diagnostics as JSON.")
@click.option("--strict", is_flag=True, help="Treat warnings as errors.")
@click.option("-q", "--quiet", is_flag=True, help="Print problems only, no summary.")
def command(files: tuple[Path, ...], as_json: bool, strict: bool, quiet: bool) -> int:
    """Check FILES against the JSON Schema and the semantic rules.

    Exit 0 when every file is valid, 1 otherwise. Warnings fail only with --strict.
    """
    from ftspec.spec.validate import validate_file

    reports = []
    failed = 0
    for path in files:
        result = validate_file(path)
        diags = result.diagnostics.sorted()
        bad = result.diagnostics.has_errors or (strict and bool(diags))
        failed += bad
        reports.append((path, not bad, diags))

    if as_json:
        emit_json({
            "valid": failed == 0,
            "files": [
                {"file": str(p), "valid": ok, "diagnostics": [d.to_json() for d in diags]}
                for p, ok, diags in reports
            ],
        })
    else:
        for path, ok, diags in reports:
            print_diagnostics(diags)
            if not quiet and ok:
                note = f" ({len(diags)} warning{'s' if len(diags) != 1 else ''})" if diags else ""
                click.echo(f"{path}: valid{note}")
        if not quiet and len(files) > 1:
            click.echo(f"{len(files) - failed} of {len(files)} files valid")
    return 1 if failed else 0
