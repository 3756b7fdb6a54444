"""Names valid for the target platform."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules._diag import error

RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME = {"kubeflow": 63, "kuberay": 47, "ray": 63, "local": 63}
"""TrainJob names are RFC 1035 labels (<= 63); KubeRay rejects RayJob names over 47."""


def name_is_valid_for_target(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    name = spec.metadata.name
    target = spec.deploy.target
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
    limit = MAX_NAME[target]
    if len(name) > limit:
        yield error(
            path,
            f"name is {len(name)} characters; deploy.target {target} allows at most {limit}",
            "name-length",
        )
