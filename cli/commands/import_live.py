"""`ftspec import trainjob --live NAMESPACE/NAME -o SPEC`: the live TrainJob as a spec, adopted."""

from __future__ import annotations

from pathlib import Path

import click
from ftspec.cli.output import emit_json, print_diagnostics


def import_live(tool: str, file: Path | None, ref: str | None, out: Path | None,
                accelerator: str, kubeconfig: str | None, context: str | None,
                as_json: bool) -> int:
    from ftspec.cli.live import report_error
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.backends import BackendOptions
    from ftspec.reconciler.kubernetes.adopt import adopt, read_live
    from ftspec.reconciler.kubernetes.backend import make_backend
    from ftspec.spec.diagnostics import SpecError

    if ref is None or file is not None or tool != "trainjob" or out is None:
        raise click.UsageError("give FILE, or (trainjob only) --live NAMESPACE/NAME with -o SPEC")
    backend = make_backend(BackendOptions(kubeconfig, context))
    try:
        found = read_live(backend, ref, accelerator)
    except BackendError as exc:
        report_error(exc)
        return 1
    except SpecError as exc:
        print_diagnostics(exc.diagnostics, err=True)
        return 1
    from ftspec.spec.rules.secrets import secrets_in_spec_text

    leaks = secrets_in_spec_text(found.text, str(out))  # never written, never printed
    if any(d.is_error for d in found.warnings) or leaks:
        print_diagnostics(list(found.warnings) + leaks, err=True)
        return 1
    out.write_text(found.text, encoding="utf-8")
    try:
        left = adopt(backend, out)
    except BackendError as exc:
        report_error(exc)
        return 1
    if as_json:
        emit_json({"ok": not left, "spec": found.text, "adopted": not left,
                   "differences": left,
                   "diagnostics": [d.to_json() for d in found.warnings]})
        return 0 if not left else 1
    print_diagnostics(found.warnings, err=True)
    click.echo(f"wrote {out}", err=True)
    if left:
        click.echo(f"not adopted: the spec's TrainJob differs from the live one at "
                   f"{', '.join(left)}; nothing was changed", err=True)
        return 1
    click.echo(f"adopted trainjob {ref}: ftspec's ownership labels and annotations added "
               "(metadata only); `ftspec plan` on the spec has nothing to change", err=True)
    return 0
