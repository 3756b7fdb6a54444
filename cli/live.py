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


def impersonation_options(func: F) -> F:
    """``--as`` / ``--as-group`` (kubectl's): they reach the kubeconfig reader as
    ``FTSPEC_KUBE_AS`` / ``FTSPEC_KUBE_AS_GROUPS``, which a user may set instead."""
    func = click.option("--as-group", "as_groups", multiple=True, expose_value=False,
                        callback=_remember("FTSPEC_KUBE_AS_GROUPS"),
                        help="Group to impersonate (repeat for several; needs --as).")(func)
    func = click.option("--as", "as_user", default=None, expose_value=False,
                        callback=_remember("FTSPEC_KUBE_AS"),
                        help="User to impersonate for the API server's requests.")(func)
    return func


def _remember(name: str) -> Callable[[Any, Any, Any], None]:
    import os

    def store(_ctx: Any, _param: Any, value: Any) -> None:
        if value:
            os.environ[name] = ",".join(value) if isinstance(value, tuple) else str(value)

    return store


def connection_options(func: F) -> F:
    func = impersonation_options(func)
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

    placed = getattr(exc, "diagnostics", None)
    if placed:  # problems found live, each at its spec field
        from ftspec.cli.output import print_diagnostics

        print_diagnostics(placed, err=True)
    out = console(err=True)
    out.print(f"[red bold]Error:[/red bold] {escape(str(exc))}")
    location = getattr(exc, "location", None)
    if location:
        out.print(f"  at {escape(location)}")
    if exc.hint:
        out.print(f"  [cyan]hint:[/cyan] {escape(exc.hint)}")


def prepare_specs(paths: Sequence[Path], overlays: tuple[Path, ...], sets: tuple[str, ...],
                  namespace: str | None, kubeconfig: str | None, context: str | None, *,
                  force_conflicts: bool = False, identity_only: bool = False,
                  check_data: bool = False) -> tuple[Backend, list[Desired]]:
    """The backend and desired states of ``paths`` (``ftspec.reconciler.desired.prepare``);
    prints the diagnostics and raises CommandFailed when a spec does not compile."""
    from ftspec.cli.output import print_diagnostics
    from ftspec.compiler.pipeline import SpecInput
    from ftspec.reconciler.backends import BackendOptions
    from ftspec.reconciler.desired import prepare, with_namespace

    sets = with_namespace(sets, namespace)
    prepared = prepare([SpecInput(p, overlays, sets) for p in paths],
                       BackendOptions(kubeconfig, context, force_conflicts, check_data),
                       identity_only=identity_only)
    if not prepared.ok or prepared.backend is None:
        print_diagnostics(list(prepared.diagnostics), err=True)
        raise CommandFailed(1)
    return prepared.backend, list(prepared.desired)


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
