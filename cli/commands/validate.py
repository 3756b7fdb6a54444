"""`ftspec validate FILE...`: schema, model, rules, launcher and target checks, all at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
from ftspec.cli.output import emit_json, print_diagnostics
from ftspec.cli.specs import spec_options
from ftspec.spec.diagnostics import Diagnostic


@dataclass(frozen=True)
class FileReport:
    path: Path
    valid: bool
    diagnostics: list[Diagnostic]
    skipped: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "file": str(self.path),
            "valid": self.valid,
            "skipped": self.skipped,
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


@click.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@spec_options
@click.option("--json", "as_json", is_flag=True, help="Print diagnostics as JSON.")
@click.option("--strict", is_flag=True, help="Treat warnings as errors.")
@click.option("--only-specs", is_flag=True,
              help="Skip files without a top-level `apiVersion: ftspec.dev/...` (pre-commit).")
@click.option("-q", "--quiet", is_flag=True, help="Print problems only, no summary.")
def command(files: tuple[Path, ...], overlays: tuple[Path, ...], sets: tuple[str, ...],
            as_json: bool, strict: bool, only_specs: bool, quiet: bool) -> int:
    """Check FILES: JSON Schema, semantic rules, and the checks of each spec's launcher
    and deploy target (no package of theirs is imported; nothing about this machine).

    Exit 0 when every file is valid, 1 otherwise. Warnings (such as an estimated
    memory overflow) fail only with --strict.
    """
    reports = [_check(path, overlays, sets, strict, only_specs) for path in files]
    failed = sum(not r.valid for r in reports)
    if as_json:
        emit_json({"valid": failed == 0, "files": [r.to_json() for r in reports]})
    else:
        _print(reports, quiet)
    return 1 if failed else 0


def _check(path: Path, overlays: tuple[Path, ...], sets: tuple[str, ...], strict: bool,
           only_specs: bool) -> FileReport:
    from ftspec.compiler.pipeline import SpecInput, compile_spec

    if only_specs:
        from ftspec.spec.detect import is_spec_file

        if not is_spec_file(path):
            return FileReport(path, True, [], skipped=True)
    from ftspec.compiler.crd_findings import validate_findings
    from ftspec.compiler.sweep import expand, point_findings

    result = compile_spec(SpecInput(path, overlays, sets), "checks")
    ordered = point_findings(result, expand(result, "checks")) + validate_findings(result)
    bad = any(d.is_error for d in ordered) or (strict and bool(ordered))
    return FileReport(path, not bad, ordered)


def _print(reports: list[FileReport], quiet: bool) -> None:
    from ftspec.spec.text import escape_text

    checked = [r for r in reports if not r.skipped]
    for report in reports:
        if report.skipped:
            if not quiet:
                click.echo(f"{escape_text(str(report.path))}: skipped (not an ftspec spec: no top-level "
                           "apiVersion: ftspec.dev/...)")
            continue
        print_diagnostics(report.diagnostics)
        if not quiet and report.valid:
            n = len(report.diagnostics)
            note = f" ({n} warning{'s' if n != 1 else ''})" if n else ""
            click.echo(f"{escape_text(str(report.path))}: valid{note}")
    if not quiet and len(checked) > 1:
        ok = sum(r.valid for r in checked)
        click.echo(f"{ok} of {len(checked)} files valid")
