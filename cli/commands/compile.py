"""`ftspec compile SPEC [--target T] [--out DIR]`: write one target's artifacts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import click
from ftspec.cli.output import emit_json, print_diagnostics
from ftspec.cli.specs import spec_options
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.text import escape_text
from ftspec.targets import TARGET_NAMES
from ftspec.targets.base import Artifact


@click.command("compile")
@click.argument("spec_file", type=click.Path(path_type=Path))
@click.option("-t", "--target", type=click.Choice(TARGET_NAMES),
              help="Artifact format; default: what deploy.target needs.")
@click.option("-o", "--out", type=click.Path(path_type=Path, file_okay=False),
              help="Write the files into DIR (default: print them, each under a header).")
@click.option("--json", "as_json", is_flag=True, help="Print artifacts and diagnostics as JSON.")
@spec_options
def command(spec_file: Path, target: str | None, out: Path | None, as_json: bool,
            overlays: tuple[Path, ...], sets: tuple[str, ...]) -> int:
    """Compile SPEC_FILE into the artifacts of one target (deterministic output). A spec
    with a sweep: every point's, each under a folder named after the point."""
    from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec
    from ftspec.compiler.sweep import expand, point_findings

    options = CompileOptions(target=target)
    result = compile_spec(SpecInput(spec_file, overlays, sets), "artifacts", options)
    expanded = expand(result, "artifacts", options)
    swept = expanded[0] is not result
    diags = point_findings(result, expanded) if swept else list(result.diagnostics)
    if not result.ok or not all(each.ok for each in expanded):
        _report(diags, as_json, result.target, [])
        return 1
    if swept:  # one folder per point
        result = replace(result, artifacts=tuple(
            replace(a, path=f"{each.job.name}/{a.path}") for each in expanded
            if each.job is not None for a in each.artifacts))
    if out is not None:
        try:
            _write(out, list(result.artifacts))
        except OSError as exc:
            from ftspec.cli.output import write_error

            raise write_error(exc.filename or out, exc) from None
    if as_json:
        _report(diags, True, result.target, [
            {"path": a.path, "kind": a.kind, "content": a.content} for a in result.artifacts])
        return 0
    print_diagnostics(diags, err=True)
    if out is not None:
        for art in result.artifacts:
            click.echo(f"wrote {escape_text(str(out / art.path))}")
    else:
        for i, art in enumerate(result.artifacts):
            click.echo(("\n" if i else "") + f"# --- {art.path} ---")
            click.echo(art.content, nl=False)
    return 0


def _write(out: Path, artifacts: Sequence[Artifact]) -> None:
    """Each artifact through a temporary file renamed into place, never through a link
    planted in ``out`` (a linked ``command.sh`` is refused, its target neither written nor
    made executable)."""
    from ftspec.spec.safe_files import SafeDir

    with SafeDir.open(out, create=True, private=False) as folder:
        for art in artifacts:
            folder.write(art.path, art.content, create_dirs=True,
                         mode=0o755 if art.path.endswith(".sh") else 0o644)


def _report(diags: list[Diagnostic], as_json: bool, target: str | None,
            artifacts: list[dict[str, str]]) -> None:
    if as_json:
        emit_json({"ok": not any(d.is_error for d in diags), "target": target,
                   "diagnostics": [d.to_json() for d in diags], "artifacts": artifacts})
    else:
        print_diagnostics(diags, err=True)
