"""Service addresses the backends will connect to are well-formed URLs."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules._diag import error
from ftspec.spec.urls import url_problem


def ray_address_is_usable(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    address = spec.deploy.ray.address
    if address is None:
        return
    problem = url_problem(address)
    if problem is not None:
        yield error(("deploy", "ray", "address"), f"not a usable Jobs API address: {problem}",
                    "ray-address", hint="the dashboard URL, e.g. http://127.0.0.1:8265")
