"""`ftspec logs SPEC`: the logs of the job's pods."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click
from ftspec.cli.live import connection_options
from ftspec.cli.specs import spec_options


@click.command("logs")
@click.argument("spec", type=click.Path(path_type=Path))
@partial(spec_options, short=False)
@connection_options
@click.option("--tail", type=int, default=None, help="Only the last N lines of each pod.")
@click.option("--follow", "-f", is_flag=True,
              help="Keep printing new lines until the job ends (every backend).")
@click.option("--selector", "-l", default=None,
              help="Kubernetes: only the job's pods that match this label selector, e.g. "
                   "one rank: -l jobset.sigs.k8s.io/job-index=0.")
@click.option("--raw", is_flag=True,
              help="Print the lines as the job wrote them: control characters (colours, "
                   "terminal escapes) unescaped and long lines whole; credentials are still "
                   "redacted.")
@click.option("--point", default=None, metavar="NAME",
              help="A sweep: the point whose logs to print (its name, e.g. tiny-sweep-lr-1e-2, "
                   "or its label, lr-1e-2).")
def command(spec: Path, overlays: tuple[Path, ...], sets: tuple[str, ...],
            kubeconfig: str | None, context: str | None, namespace: str | None,
            tail: int | None, follow: bool, selector: str | None, raw: bool,
            point: str | None) -> int:
    """Print the logs of SPEC's job (local: the run's log; Ray: the job's; Kubernetes: the
    pods its controller created, each line prefixed with the pod's name). Control
    characters are escaped and lines over 16 KiB cut, unless --raw."""
    from ftspec.cli.live import CommandFailed, prepare_specs, report_error
    from ftspec.cli.output import log_line
    from ftspec.cli.points import one_point
    from ftspec.reconciler.backend import BackendError

    try:
        backend, desired = prepare_specs((spec,), overlays, sets, namespace, kubeconfig, context,
                                         identity_only=True)
        one = one_point(desired, point, spec)
        for line in backend.logs(one, tail=tail, follow=follow, selector=selector):
            # a job may print a credential: never echoed; --raw keeps its colour codes too
            click.echo(log_line(line, raw=raw), color=True if raw else None)
    except CommandFailed as exc:
        return exc.code
    except BackendError as exc:
        report_error(exc)
        return 1
    return 0
