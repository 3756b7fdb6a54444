"""Bytes per element of the compute dtypes, shared by the memory estimate's modules."""

from __future__ import annotations

DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
