"""A launcher's files at another place: platforms deliver ``Launch.files`` into a folder
(a ConfigMap mount, a per-run directory) and point the command line at them there."""

from __future__ import annotations

from typing import Iterable


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
