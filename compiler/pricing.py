"""The user's prices: a YAML mapping of catalog accelerator to price per device-hour,

    nvidia-h100-80gb: 2.49
    nvidia-a100-80gb: 1.29

read by ``plan --pricing FILE`` and ``explain --pricing FILE``. ftspec ships no prices (they
change by provider, region and contract); without a file the plan shows no cost. Read with
the spec loader, so a wrong entry is reported at its file:line:col.
"""

from __future__ import annotations

from pathlib import Path

from ftspec.spec.catalog.accelerators import ACCELERATORS
from ftspec.spec.diagnostics import Diagnostic, Severity, SpecError


def load_pricing(path: Path) -> dict[str, float]:
    """The prices in ``path``; ``SpecError`` with every wrong entry located."""
    from ftspec.spec.loader import load_spec_file

    doc = load_spec_file(path)
    prices: dict[str, float] = {}
    diags: list[Diagnostic] = []
    for key, value in doc.data.items():
        if key not in ACCELERATORS:
            diags.append(Diagnostic(
                Severity.ERROR, f"unknown accelerator {key!r} in the pricing file",
                span=doc.span_of((key,), key=True), code="pricing.accelerator",
                hint="one of: " + ", ".join(ACCELERATORS)))
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            diags.append(Diagnostic(
                Severity.ERROR, f"price of {key} must be a number >= 0 (per device-hour), "
                f"not {value!r}", span=doc.span_of((key,)), code="pricing.price"))
        else:
            prices[key] = float(value)
    if diags:
        raise SpecError(diags)
    return prices
