"""`ftspec status SPEC...`: the common phase plus the platform's own status; with no SPEC,
the runs of this project as `ftspec list` shows them (as `kubectl get` and `terraform show`
need no argument)."""

from __future__ import annotations

from pathlib import Path

import click
from ftspec.cli.live import connection_options
from ftspec.cli.specs import spec_options


@click.command("status")
@click.argument("specs", nargs=-1, type=click.Path(path_type=Path))
@spec_options
@connection_options
@click.option("--watch", is_flag=True, help="Keep following until the job ends.")
@click.option("--verbose", "-v", is_flag=True,
              help="Also the backend's details (pid, argv, log tail, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON (everything).")
def command(specs: tuple[Path, ...], overlays: tuple[Path, ...], sets: tuple[str, ...],
            kubeconfig: str | None, context: str | None, namespace: str | None,
            watch: bool, verbose: bool, as_json: bool) -> int:
    """Per job: phase, step n/N, elapsed and time left, the loss, where the outputs are.

    With no SPECS: the runs recorded here (and in --namespace), as `ftspec list` lists them."""
    if not specs:
        return _listed(overlays, sets, kubeconfig, context, namespace, watch, verbose, as_json)
    from ftspec.cli.live import (
        CommandFailed,
        ConsoleReporter,
        console,
        prepare_specs,
        report_error,
    )
    from ftspec.cli.render_status import render_status, status_json
    from ftspec.reconciler.backend import BackendError

    try:
        backend, desired = prepare_specs(specs, overlays, sets, namespace, kubeconfig, context,
                                         identity_only=True)
        statuses = []
        for d in desired:
            if watch:
                reporter = ConsoleReporter(json_events=as_json)
                statuses.append(backend.wait(d, reporter))
                reporter.close()
            else:
                statuses.extend(backend.status(d))
    except CommandFailed as exc:
        return exc.code
    except BackendError as exc:
        report_error(exc)
        return 1
    if as_json:
        from ftspec.cli.output import emit_json

        emit_json([status_json(s) for s in statuses])
        return 0
    out = console()
    for s in statuses:
        for line in render_status(status_json(s), verbose):
            out.print(line)
    return 0


def _listed(overlays: tuple[Path, ...], sets: tuple[str, ...], kubeconfig: str | None,
            context: str | None, namespace: str | None, watch: bool, verbose: bool,
            as_json: bool) -> int:
    """`status` with no spec: `list`'s table (or JSON); the options that need a spec are
    refused in one line."""
    from ftspec.cli.live import report_error
    from ftspec.reconciler.backend import BackendError

    needs_spec = [name for name, given in (("--watch", watch), ("-v/--verbose", verbose),
                                           ("-f/--values", overlays), ("--set", sets))
                  if given]
    if needs_spec:
        report_error(BackendError(f"{', '.join(needs_spec)} needs a spec: name one",
                                  hint="`ftspec status SPEC --watch`; `ftspec status` alone "
                                  "lists the runs"))
        return 1
    from ftspec.cli.commands.list_ import command as list_command

    ctx = click.get_current_context()
    return int(ctx.invoke(list_command, specs=(), kubeconfig=kubeconfig, context=context,
                          namespace=namespace, as_json=as_json) or 0)
