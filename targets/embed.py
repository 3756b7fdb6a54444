"""How platform targets embed a launcher's run: its checks apply to them, and its files
are delivered into a folder (a ConfigMap mount, a per-run directory) that the command line
is pointed at."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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


def set_flags(argv: Iterable[str], flags: Mapping[str, str], at: int = 2) -> list[str]:
    """``argv`` with each flag of ``flags`` given that value: replaced where the argv has it
    (``--flag value`` or ``--flag=value``), else inserted at ``at`` (after the launcher's
    two words, ``accelerate launch`` / ``tune run``, where launcher options go)."""
    items = list(argv)
    out: list[str] = []
    skip = False
    for i, item in enumerate(items):
        if skip:
            skip = False
            continue
        flag, eq, _ = item.partition("=")
        if flag in flags:
            out += [flag, flags[flag]]
            skip = not eq and i + 1 < len(items)
        else:
            out.append(item)
    missing = [part for flag, value in flags.items() if flag not in out
               for part in (flag, value)]
    return out[:at] + missing + out[at:]


def launcher_check(job: Job) -> list[Diagnostic]:
    """Platform artifacts embed the launcher's, so the launcher's checks apply too."""
    from ftspec.targets import get_target

    return get_target(job.launcher).check(job)
