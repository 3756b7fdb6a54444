"""`ftspec list [SPEC...]`: the runs of this project, of a Ray cluster, of Kubernetes namespaces.

Without arguments: the local runs recorded in this working directory (runs of deleted spec
files too). Each SPEC adds the place it deploys to: a Ray cluster's ftspec jobs, or a
namespace's ftspec TrainJobs / RayJobs (every run there, not only that spec's).
``--namespace`` and ``--ray-address`` add a place without a spec.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import click
from ftspec.cli.live import connection_options
from ftspec.cli.specs import spec_options


@click.command("list")
@click.argument("specs", nargs=-1, type=click.Path(path_type=Path))
@spec_options
@connection_options
@click.option("--ray-address", "ray_addresses", multiple=True,
              help="Also list the ftspec jobs of this Ray cluster (Jobs API URL). Repeatable.")
@click.option("--phase", "phases", multiple=True,
              type=click.Choice(["Pending", "Running", "Succeeded", "Failed", "Unknown"],
                                case_sensitive=False), help="Only runs in this phase. Repeatable.")
@click.option("--target", "targets", multiple=True, help="Only runs of this deploy target.")
@click.option("--name", "pattern", default=None, help="Only runs whose name matches this glob.")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
def command(specs: tuple[Path, ...], overlays: tuple[Path, ...], sets: tuple[str, ...],
            kubeconfig: str | None, context: str | None,
            namespace: str | None, ray_addresses: tuple[str, ...], phases: tuple[str, ...],
            targets: tuple[str, ...], pattern: str | None, as_json: bool) -> int:
    """List the runs ftspec started: name, target, phase, step, loss, age, output."""
    from ftspec.cli.live import report_error
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.inventory import kube_rows, local_rows, ray_rows

    try:
        rays, namespaces = _places(specs, overlays, sets)
    except _SpecError as exc:
        return exc.code
    rays.extend(a for a in ray_addresses if a not in rays)
    if namespace and namespace not in namespaces:
        namespaces.append(namespace)
    try:
        rows = local_rows(Path.cwd())
        for address in rays:
            rows += ray_rows(address)
        if namespaces:
            from ftspec.reconciler.kubernetes.kubeconfig import load_connection
            from ftspec.reconciler.kubernetes.transport import Transport

            transport = Transport(load_connection(kubeconfig, context))
            for ns in namespaces:
                rows += kube_rows(transport, ns)
    except BackendError as exc:
        report_error(exc)
        return 1
    wanted = {p.lower() for p in phases}
    rows = [r for r in rows if (not wanted or r.phase.lower() in wanted)
            and (not targets or r.target in targets)
            and (pattern is None or fnmatch.fnmatchcase(r.name, pattern))]
    if as_json:
        from ftspec.cli.output import emit_json

        emit_json([r.to_json() for r in rows])
        return 0
    from ftspec.cli.output import print_markup
    from ftspec.cli.render_list import render_rows

    print_markup(render_rows([r.to_json() for r in rows]))
    return 0


class _SpecError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _places(specs: tuple[Path, ...], overlays: tuple[Path, ...], sets: tuple[str, ...]
            ) -> tuple[list[str], list[str]]:
    """The Ray addresses and namespaces the specs (with overlays and --set) deploy to."""
    from ftspec.cli.output import print_diagnostics
    from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec
    from ftspec.reconciler.ray.jobsapi import resolve_address
    from ftspec.spec.platforms import on_kubernetes

    rays: list[str] = []
    namespaces: list[str] = []
    for path in specs:
        compiled = compile_spec(SpecInput(path, overlays, sets), "identity",
                                CompileOptions(schema="on-error"))
        if not compiled.ok or compiled.job is None:
            print_diagnostics([d for d in compiled.diagnostics if d.is_error], err=True)
            raise _SpecError(1)
        job: Any = compiled.job
        if job.target == "ray":
            address = resolve_address(job.spec.deploy.ray.address)
            if address not in rays:
                rays.append(address)
        elif on_kubernetes(job.target) and job.namespace not in namespaces:
            namespaces.append(job.namespace)
    return rays, namespaces
