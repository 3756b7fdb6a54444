"""How platform targets embed a launcher's run: its checks apply to them, and its files
are delivered into a folder (a ConfigMap mount, a per-run directory) that the command line
is pointed at."""

from __future__ import annotations

from collections.abc import Iterable

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job


def relocate(argv: Iterable[str], names: Iterable[str], root: str) -> list[str]:
    """``argv`` with every item naming one of the files (``name`` or ``--flag=name``)
    replaced by ``root/name``."""
    known = set(names)
    out = []
    for item in argv:
        flag, eq, value = item.partition("=")
        if item in known:
            out.append(f"{root}/{item}")
        elif eq and flag.startswith("-") and value in known:
            out.append(f"{flag}={root}/{value}")
        else:
            out.append(item)
    return out


def launcher_check(job: Job) -> list[Diagnostic]:
    """Platform artifacts embed the launcher's, so the launcher's checks apply too."""
    from ftspec.targets import get_target

    return get_target(job.launcher).check(job)
