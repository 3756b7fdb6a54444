"""Sizes and counts as a person reads them: ``778 MiB``, ``1.50 GiB``, ``115K`` parameters.

One place for the units of every human view of memory and parameter counts (``explain``,
its verdict). The JSON keeps the raw numbers (GiB, billions)."""

from __future__ import annotations

_UNITS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def size(gib: float) -> str:
    """A size given in GiB, in the largest unit it fills: ``1.50 GiB``, ``778 MiB``,
    ``448 KiB``, ``512 B``."""
    nbytes = gib * 2**30
    for unit, name in _UNITS:
        if nbytes >= unit:
            value = nbytes / unit
            return f"{value:.2f} {name}" if name == "GiB" else f"{value:.0f} {name}"
    return f"{nbytes:.0f} B"


def count(n: float) -> str:
    """A count with a suffix: ``950``, ``16K``, ``115K``, ``6.74M``, ``8.03B``."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.3g}{suffix}"
    return f"{n:.0f}"
