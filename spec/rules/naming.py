"""Names valid for the target platform."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules._diag import error

RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_LABEL = 63
"""An RFC 1035 label has at most 63 characters. A target with a tighter limit (KubeRay's
47 for a RayJob) checks it itself (``targets/``)."""


def name_is_valid_for_target(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    name = spec.metadata.name
    path = ("metadata", "name")
    if not RFC1035.match(name):
        suggestion = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
        suggestion = re.sub(r"^[^a-z]+", "", suggestion)
        yield error(
            path,
            f'name "{name}" is not an RFC 1035 label: lowercase letters, digits and "-", '
            "starting with a letter and ending with a letter or digit",
            "name-format",
            hint=f'try "{suggestion}"' if suggestion and RFC1035.match(suggestion) else None,
        )
    if len(name) > MAX_LABEL:
        yield error(
            path,
            f"name is {len(name)} characters; an RFC 1035 label has at most {MAX_LABEL}",
            "name-length",
        )
