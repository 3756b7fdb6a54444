"""Bytes per element of the compute dtypes, shared by the memory estimate's modules."""

from __future__ import annotations

from ftspec.spec.dtypes import BYTES

DTYPE_BYTES = {name: float(size) for name, size in BYTES.items()}
