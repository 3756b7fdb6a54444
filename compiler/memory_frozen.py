"""What ``method.unfrozen_parameters`` leaves trainable, for ``compiler/memory.py``.

The patterns are applied by the same rule as the job's runtime (``runtime/unfrozen.py``:
``re.match`` on each name of ``named_parameters()``, floating-point tensors only) to the
names ``compiler/memory_names.py`` lists for the architecture: transformers' names for a
full fine-tune, PEFT's (``base_model.model.…``, adapters included) under LoRA, where the
patterns decide about the adapters too. Over a 4/8-bit base the quantized linear weights
take no gradient whatever the patterns say. GPTQ bases (their own tensor names) and
architectures ``memory_names`` does not name are not counted: ``None``, and the estimate
keeps the method's own trainable set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ftspec.compiler.memory_lora import reached_modules
from ftspec.compiler.memory_names import Param, hf_parameters, peft_parameters
from ftspec.compiler.memory_placement import Placement
from ftspec.runtime.unfrozen import compile_patterns, unfrozen
from ftspec.spec.ir import ModelFacts
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.method import LORA_FAMILY, QUANTIZED_LORA


@dataclass(frozen=True)
class Unfrozen:
    """The trainable parameters the patterns leave: base model parameters (in the loaded
    weights' dtype), adapter parameters, and whether the input embedding is among them."""

    base: float
    adapters: float
    embedding: bool
    total_tensors: int
    trained_tensors: int


def named_parameters(spec: FineTuneSpec, model: ModelFacts,
                     lora_modules: tuple[str, ...]) -> tuple[Param, ...] | None:
    """The parameters of the model the trainer trains, as it names them; ``None`` where
    they are not known here (another method, a GPTQ base, an architecture named otherwise)."""
    kind = spec.method.kind
    if kind == "full":
        return hf_parameters(model)
    if kind not in LORA_FAMILY or kind == "gptq_lora":
        return None
    return peft_parameters(model, reached_modules(model, lora_modules),
                           spec.method.lora_settings.rank, dora=kind == "dora")


def unfrozen_params(spec: FineTuneSpec, model: ModelFacts,
                    lora_modules: tuple[str, ...] = ()) -> Unfrozen | None:
    """What trains under the spec's patterns; ``None`` without patterns or where the
    parameters are not known (``named_parameters``)."""
    patterns = spec.method.unfrozen_parameters
    params = named_parameters(spec, model, lora_modules) if patterns else None
    try:
        compiled = compile_patterns(patterns)
    except re.error:  # validate's rule says which
        return None
    if params is None:
        return None
    quantized = spec.method.kind in QUANTIZED_LORA
    base = adapters = trained = 0
    embedding = False
    for p in params:
        if not unfrozen(p.name, compiled) or quantized and p.linear not in ("", "lora"):
            continue
        trained += 1
        if p.linear == "lora":
            adapters += p.numel
        else:
            base += p.numel
        embedding = embedding or p.name.endswith("embed_tokens.weight")
    return Unfrozen(float(base), float(adapters), embedding, len(params), trained)


def unmatched_patterns(spec: FineTuneSpec, model: ModelFacts,
                       lora_modules: tuple[str, ...]) -> list[int]:
    """Indices of the patterns that match no parameter name (empty where the names are
    not known)."""
    patterns = spec.method.unfrozen_parameters
    params = named_parameters(spec, model, lora_modules) if patterns else None
    try:
        compiled = compile_patterns(patterns)
    except re.error:
        return []
    if params is None:
        return []
    return [i for i, c in enumerate(compiled) if not any(unfrozen(p.name, (c,)) for p in params)]


def unfrozen_base(spec: FineTuneSpec, frozen: Unfrozen | None) -> float:
    """Base parameters an adapter method also trains by pattern (0 for a full fine-tune,
    whose trainable parameters are all base ones, and without patterns)."""
    return frozen.base if frozen is not None and spec.method.kind != "full" else 0.0


def unfrozen_base_bytes(spec: FineTuneSpec, frozen: Unfrozen | None, load: float,
                        state: float, place: Placement) -> tuple[float, float]:
    """The gradients and optimizer state of ``unfrozen_base``: ``load`` bytes per
    gradient element (the loaded weights' dtype) and ``state`` bytes of optimizer state per
    parameter, sharded like the adapters'; none on the device when offloaded."""
    base = unfrozen_base(spec, frozen)
    grads = 0.0 if place.params_offloaded else base * load / place.grads
    optim = 0.0 if place.optim_offloaded else base * state / place.optim
    return grads, optim
