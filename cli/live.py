"""Shared plumbing of the live commands (plan, apply, destroy, status, logs)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from ftspec.reconciler.backend import Backend, BackendError, Desired

F = TypeVar("F", bound=Callable[..., Any])


class CommandFailed(Exception):
    """Already reported to the user; exit with ``code``."""

    def __init__(self, code: int = 1) -> None:
        super().__init__(code)
        self.code = code


def connection_options(func: F) -> F:
    func = click.option("--namespace", "-n", "namespace", default=None,
                        help="Override metadata.namespace of every spec.")(func)
    func = click.option("--context", default=None, help="kubeconfig context to use.")(func)
    func = click.option("--kubeconfig", default=None, type=click.Path(),
                        help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config).")(func)
    return func


def console(err: bool = False) -> Any:
    from ftspec.cli.output import use_color
    from ftspec.cli.safe_console import SafeConsole

    stream = sys.stderr if err else sys.stdout
    return SafeConsole(file=stream, no_color=not use_color(stream), highlight=False,
                   soft_wrap=True, emoji=False)


def report_error(exc: BackendError) -> None:
    from rich.markup import escape

    out = console(err=True)
    out.print(f"[red bold]Error:[/red bold] {escape(str(exc))}")
    spec_path = getattr(exc, "spec_path", None)
    spec_file = getattr(exc, "spec_file", None)
    if spec_path and spec_file:
        from ftspec.reconciler.locate import locate

        out.print(f"  at {escape(locate(spec_file, spec_path))}")
    if exc.hint:
        out.print(f"  [cyan]hint:[/cyan] {escape(exc.hint)}")


def load_desired(paths: Sequence[Path], overlays: tuple[Path, ...], sets: tuple[str, ...],
                 namespace: str | None) -> list[Desired]:
    from ftspec.cli.output import print_diagnostics
    from ftspec.cli.specs import load_spec
    from ftspec.compiler.build import build_job
    from ftspec.compiler.dispatch import check_job, compile_job, default_target
    from ftspec.reconciler.kubernetes.resources import JOB_KIND

    if namespace:
        sets = (*sets, f"metadata.namespace={namespace}")
    out: list[Desired] = []
    failed = False
    for path in paths:
        loaded = load_spec(path, overlays, sets, schema="on-error")
        validated = loaded.validated
        if not loaded.ok or validated.spec is None:
            print_diagnostics(validated.diagnostics.sorted(), err=True)
            failed = True
            continue
        job = build_job(validated.spec, path)
        target = default_target(job)
        problems = [d for d in check_job(job, target) if d.is_error]
        if problems:
            print_diagnostics(problems, err=True)
            failed = True
            continue
        # Kubernetes targets render in the backend, for the API version the cluster serves.
        artifacts = () if job.target in JOB_KIND else tuple(compile_job(job, target))
        out.append(Desired(job=job, artifacts=artifacts, spec_file=str(path)))
    if failed:
        raise CommandFailed(1)
    return out


def backend_for(desired: Sequence[Desired], kubeconfig: str | None, context: str | None,
                force_conflicts: bool = False) -> Backend:
    from ftspec.reconciler.backends import BackendOptions, backend_name, get_backend

    names = {backend_name(d.job.target) for d in desired}
    if len(names) > 1:
        raise BackendError(f"these specs use different backends ({', '.join(sorted(names))})",
                           hint="plan or apply specs of one deploy.target family at a time")
    options = BackendOptions(kubeconfig=kubeconfig, context=context,
                             force_conflicts=force_conflicts)
    return get_backend(names.pop(), options)


class ConsoleReporter:
    """Events to stderr. Training progress: one live line on a terminal (rewritten in
    place), a plain line per step otherwise, or with ``json_events`` one JSON object per
    step (``{"event": "progress", ...}``, one a line) while other events stay quiet."""

    def __init__(self, quiet: bool = False, json_events: bool = False) -> None:
        self._out = console(err=True)
        self._quiet = quiet
        self._json = json_events
        self._tty = sys.stderr.isatty()
        self._last_wait: str | None = None
        self._live = False

    def event(self, message: str, **data: Any) -> None:
        from rich.markup import escape

        if data.get("progress") and self._json:
            import json

            event = {"event": "progress", **{k: v for k, v in data.items() if k != "progress"}}
            from ftspec.spec.secrets import redact_data

            sys.stderr.write(json.dumps(redact_data(event)) + "\n")
            sys.stderr.flush()
            return
        if self._quiet or self._json:
            return
        if data.get("progress") and self._tty:
            width = max(20, self._out.width - 1)
            self._out.print(f"[cyan]{escape(message[:width].ljust(width))}[/cyan]", end="\r")
            self._live = True
            return
        if data.get("waiting"):
            addr = str(data.get("address"))
            elapsed = float(data.get("elapsed") or 0)
            if self._tty:
                self._out.print(escape(message), end="\r")
            elif self._last_wait != addr or int(elapsed) % 10 == 0 and elapsed >= 10:
                self._out.print(escape(message))
            self._last_wait = addr
            return
        self.close()
        self._out.print(escape(message))

    def close(self) -> None:
        """End a live line (the last progress stays on screen)."""
        if self._live:
            self._out.print()
            self._live = False


def confirm(question: str, auto_approve: bool) -> bool:
    if auto_approve:
        return True
    if not sys.stdin.isatty():
        raise BackendError("cannot ask for confirmation: standard input is not a terminal",
                           hint="re-run with --auto-approve to apply without asking")
    out = console()
    out.print(f"\n[bold]{question}[/bold]\n  Only 'yes' will be accepted to approve.\n")
    answer = click.prompt("  Enter a value", default="", show_default=False)
    return bool(answer.strip() == "yes")
