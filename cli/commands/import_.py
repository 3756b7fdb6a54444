"""`ftspec import TOOL FILE [KEY=VALUE ...] [-o SPEC]`: another tool's config as a spec."""

from __future__ import annotations

from pathlib import Path

import click
from ftspec.cli.live import impersonation_options
from ftspec.cli.output import emit_json, print_diagnostics
from ftspec.compiler.importers import TOOL_NAMES
from ftspec.compiler.importers.aim import AIMS
from ftspec.spec.catalog.accelerators import ACCELERATOR_NAMES


@click.command("import")
@click.argument("tool", type=click.Choice(TOOL_NAMES))
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False), required=False)
@click.argument("args", nargs=-1)
@click.option("-o", "--out", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the spec to SPEC (default: print it).")
@click.option("--nproc-per-node", type=click.IntRange(min=1),
              help="Processes per node the config runs with (tune run's flag).")
@click.option("--nnodes", type=click.IntRange(min=1),
              help="Nodes the config runs on (default 1; 2 for torchtune's *_multinode).")
@click.option("--accelerator", type=click.Choice(ACCELERATOR_NAMES), default="nvidia-a100-80gb",
              show_default=True, help="GPU model (configs do not name one).")
@click.option("--job", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="oumi: the job config (oumi launch's) whose resources the run gets.")
@click.option("--launch", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="llamafactory: the shell script that launches FILE (default: a script "
              "beside FILE whose command names it, else FILE's usage comment).")
@click.option("--accelerate-config", type=click.Path(path_type=Path, dir_okay=False,
                                                     exists=True),
              help="llamafactory: the accelerate config FILE runs under (default: the "
              "launch command's --config_file).")
@click.option("--target", "targets", multiple=True, type=click.Choice(AIMS),
              help="Aim the spec at a target (repeatable: --target torchtune --target "
              "kubeflow): the values it needs where the source allows them, each a warning "
              "at its source line.")
@click.option("--live", metavar="NAMESPACE/NAME",
              help="trainjob: read the TrainJob from the cluster and adopt it (needs -o).")
@click.option("--kubeconfig", default=None, type=click.Path(),
              help="kubeconfig file for --live (default: $KUBECONFIG or ~/.kube/config).")
@click.option("--context", default=None, help="kubeconfig context for --live.")
@impersonation_options
@click.option("--json", "as_json", is_flag=True, help="Print the spec and warnings as JSON.")
def command(tool: str, file: Path | None, args: tuple[str, ...], out: Path | None,
            nproc_per_node: int | None, nnodes: int | None, accelerator: str,
            job: Path | None, launch: Path | None, accelerate_config: Path | None,
            targets: tuple[str, ...],
            live: str | None, kubeconfig: str | None, context: str | None,
            as_json: bool) -> int:
    """Import FILE, a TOOL config, as a spec; ARGS are the tool's KEY=VALUE overrides
    (torchtune: as `tune run` takes them, ~KEY removes a key; oumi: dotted keys as `oumi
    train` takes them, e.g. training.max_steps=20). `ftspec import trainjob
    --live NAMESPACE/NAME -o SPEC` reads a live TrainJob instead and adopts it: `ftspec
    plan SPEC` then has nothing to change."""
    from ftspec.compiler.importers import IMPORTERS, ImportOptions
    from ftspec.compiler.importers.aim import aim
    from ftspec.spec.diagnostics import SpecError

    if targets and live is not None:
        raise click.UsageError("--target aims a FILE import; --live adopts the TrainJob as it "
                               "runs (import it, then compile the spec for the target)")
    if live is not None or file is None:
        from ftspec.cli.commands.import_live import import_live

        return import_live(tool, file, live, out, accelerator, kubeconfig, context, as_json)
    if (launch or accelerate_config) and tool != "llamafactory":
        raise click.UsageError("--launch and --accelerate-config are for `ftspec import "
                               f"llamafactory` (not {tool})")
    opts = ImportOptions(nproc_per_node, nnodes, accelerator, job, launch, accelerate_config)
    try:
        result = aim(IMPORTERS[tool](file, args, opts), targets)
    except SpecError as exc:
        if as_json:
            emit_json({"ok": False, "diagnostics": [d.to_json() for d in exc.diagnostics]})
        else:
            print_diagnostics(exc.diagnostics, err=True)
        return 1
    from ftspec.spec.rules.secrets import secrets_in_import

    leaks = secrets_in_import(result.data, file, args)  # never written, never printed
    if leaks:
        if as_json:
            emit_json({"ok": False, "diagnostics": [d.to_json() for d in leaks]})
        else:
            print_diagnostics(leaks, err=True)
        return 1
    ok = not any(d.is_error for d in result.warnings)
    if out is not None:
        out.write_text(result.text, encoding="utf-8")
    if as_json:
        emit_json({"ok": ok, "spec": result.text,
                   "diagnostics": [d.to_json() for d in result.warnings]})
        return 0 if ok else 1
    print_diagnostics(result.warnings, err=True)
    if out is not None:
        click.echo(f"wrote {out}", err=True)
    else:
        click.echo(result.text, nl=False)
    return 0 if ok else 1
