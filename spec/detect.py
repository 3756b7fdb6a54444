"""Is a YAML file an ftspec spec at all? (``validate --only-specs``, the pre-commit hook.)

A textual check, so it works on files too broken to parse: a spec has a top-level
``apiVersion: ftspec.dev/...`` line. Anything else (CI configs, Kubernetes manifests,
``-f`` overlays, which carry no apiVersion) is not a spec.
"""

from __future__ import annotations

import re
from pathlib import Path

API_GROUP = "ftspec.dev/"
_API_LINE = re.compile(r"""^["']?apiVersion["']?[ \t]*:[ \t]*["']?ftspec\.dev/""", re.MULTILINE)


def is_spec_text(text: str) -> bool:
    return _API_LINE.search(text) is not None


def is_spec_file(path: Path, *, limit: int = 1 << 20) -> bool:
    """True when ``path`` declares an ftspec apiVersion; unreadable files count as specs
    so that validation reports why they cannot be read."""
    from ftspec.spec.bounded import InputRefused, read_bounded

    try:
        head = read_bounded(path, limit, head=True)
    except InputRefused:
        return True
    return is_spec_text(head.decode("utf-8", errors="replace"))
