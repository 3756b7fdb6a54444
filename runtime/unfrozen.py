"""The rule of ``method.unfrozen_parameters``, one place for both sides: the job's runtime
freezes by it (``runtime/hf_sft/trainable.py``) and the memory estimate counts the
trainable parameters by it (``compiler/memory_frozen.py``). Standard library only.

A parameter trains when one of the patterns matches at the start of its name
(``re.match``, not ``search`` or ``fullmatch``), the name being the one the trained model
gives it (``named_parameters()``: transformers' ``model.layers.3.mlp.up_proj.weight``, or
PEFT's ``base_model.model.…`` with an adapter) and its tensor is floating point (a 4/8-bit
quantized weight cannot take a gradient).
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def compile_patterns(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    """The spec's patterns, compiled once."""
    return tuple(re.compile(p) for p in patterns)


def unfrozen(name: str, patterns: Sequence[re.Pattern[str]]) -> bool:
    """Whether the parameter called ``name`` matches one of ``patterns`` (``re.match``)."""
    return any(p.match(name) for p in patterns)
