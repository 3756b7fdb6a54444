"""The one table of dtypes: the spec's names (``model.dtype``, a quantization's
``compute_dtype`` / ``storage_dtype``), their torch / Hugging Face names and their size.

Launchers write the torch names (``torch_dtype: bfloat16``), importers read them back, the
memory estimate and the local preflight price weights by the bytes; each reads this table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DtypeFacts:
    torch: str
    """torch's name (``torch.bfloat16``), which transformers' ``torch_dtype`` and
    bitsandbytes' ``bnb_4bit_*`` options take."""
    bytes: int
    """Bytes per element."""
    floating: bool = True
    """A compute dtype (``model.dtype``); ``uint8`` is a quantized storage dtype only."""


DTYPES: dict[str, DtypeFacts] = {
    "bf16": DtypeFacts("bfloat16", 2),
    "fp16": DtypeFacts("float16", 2),
    "fp32": DtypeFacts("float32", 4),
    "uint8": DtypeFacts("uint8", 1, floating=False),
}
"""The spec's dtype name -> its facts."""

TORCH_NAMES: dict[str, str] = {name: f.torch for name, f in DTYPES.items()}
"""Spec name -> torch name (``bf16`` -> ``bfloat16``), storage dtypes included."""
FROM_TORCH: dict[str, str] = {f.torch: name for name, f in DTYPES.items() if f.floating}
"""torch name -> the spec's compute dtype (``float16`` -> ``fp16``)."""
STORAGE_FROM_TORCH: dict[str, str] = {f.torch: name for name, f in DTYPES.items()}
"""torch name -> the spec's ``storage_dtype`` (``uint8`` too)."""
BYTES: dict[str, int] = {name: f.bytes for name, f in DTYPES.items()}
"""Spec name -> bytes per element."""
