"""`ftspec status SPEC...`: the common phase plus the platform's own status."""

from __future__ import annotations

from pathlib import Path

import click
from ftspec.cli.live import connection_options
from ftspec.cli.specs import spec_options


@click.command("status")
@click.argument("specs", nargs=-1, required=True, type=click.Path(path_type=Path))
@spec_options
@connection_options
@click.option("--watch", is_flag=True, help="Keep following until the job ends.")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def command(specs: tuple[Path, ...], overlays: tuple[Path, ...], sets: tuple[str, ...],
            kubeconfig: str | None, context: str | None, namespace: str | None,
            watch: bool, as_json: bool) -> int:
    """Show the phase (Pending/Running/Succeeded/Failed/Unknown) of each spec's job."""
    from dataclasses import asdict

    from ftspec.cli.live import (
        CommandFailed,
        ConsoleReporter,
        console,
        prepare_specs,
        report_error,
    )
    from ftspec.reconciler.backend import BackendError
    from rich.markup import escape

    try:
        backend, desired = prepare_specs(specs, overlays, sets, namespace, kubeconfig, context,
                                         identity_only=True)
        statuses = []
        for d in desired:
            if watch:
                statuses.append(backend.wait(d, ConsoleReporter(quiet=as_json)))
            else:
                statuses.extend(backend.status(d))
    except CommandFailed as exc:
        return exc.code
    except BackendError as exc:
        report_error(exc)
        return 1
    if as_json:
        from ftspec.cli.output import emit_json

        emit_json([{**asdict(s), "phase": s.phase.value} for s in statuses])
        return 0
    out = console()
    colors = {"Succeeded": "green", "Failed": "red", "Running": "cyan", "Pending": "yellow"}
    for s in statuses:
        color = colors.get(s.phase.value, "white")
        out.print(f"{escape(s.address)}: [{color} bold]{s.phase.value}[/{color} bold] "
                  f"- {escape(s.message)}")
        for key, value in s.platform.items():
            if not value:
                continue
            if isinstance(value, (list, tuple)):  # e.g. a log tail: one line each
                out.print(f"    {key}:")
                for item in value:
                    out.print(f"      {escape(str(item))}")
            else:
                out.print(f"    {key}: {escape(str(value))}")
    return 0
