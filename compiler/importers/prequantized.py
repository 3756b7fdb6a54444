"""A base model whose checkpoint is already quantized (GPTQ, AWQ, bitsandbytes, ...).

Such a checkpoint is recognised by the tag its publisher adds to the name (``-GPTQ``,
``-GPTQ-Int4``, ``-AWQ``, ``-bnb-4bit``, ``-AQLM``, ...) or, in the axolotl config, by
``gptq: true``; the config's own on-the-fly quantization keys do not apply to it (the
checkpoint's ``quantization_config`` wins in transformers). It is written as the spec method
that trains over it, whose ``method.quantization`` the memory estimate prices (bits / 8 per
base weight, not the dtype's bytes):

* GPTQ: ``method.kind: gptq_lora`` with ``quantization: {bits, quant_type: gptq}``;
* bitsandbytes 4-bit / 8-bit: ``qlora`` (nf4 / ``int8``), as loading it quantizes;
* AWQ, AQLM, GGUF, EXL2, HQQ: no spec method trains over them, refused at the model line;
* full fine-tuning over any of them is refused at the model line (packed integer weights
  take no gradient).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ftspec.compiler.importers.base import SpecDraft, unsupported
from ftspec.compiler.importers.trainable import put_int8
from ftspec.spec.diagnostics import KeyPath


@dataclass(frozen=True)
class Prequantized:
    method: str
    """gptq, awq, bnb, aqlm, gguf, exl2, hqq."""
    bits: int
    tag: str
    """The name's part that says so (or the key that does)."""


_TAG = re.compile(r"(?:^|[-_.])(gptq|awq|bnb|aqlm|gguf|exl2|hqq)(?=$|[-_.])", re.IGNORECASE)
_BITS = re.compile(r"(?:^|[-_.])(?:int|w|nf)?(2|3|4|8)(?:bit|bits|b)?(?=$|[-_.])",
                   re.IGNORECASE)
NAMES = {"gptq": "GPTQ", "awq": "AWQ", "bnb": "bitsandbytes", "aqlm": "AQLM",
         "gguf": "GGUF", "exl2": "EXL2", "hqq": "HQQ"}
DEFAULT_BITS = {"gptq": 4, "awq": 4, "bnb": 4, "aqlm": 2, "gguf": 4, "exl2": 4, "hqq": 4}


def prequantized(name: str) -> Prequantized | None:
    """The quantization a checkpoint's name announces (its last path part), if any."""
    last = name.rstrip("/").rsplit("/", 1)[-1]
    found = _TAG.search(last)
    if found is None:
        return None
    method = found.group(1).lower()
    rest = last[found.start():]
    bits = _BITS.search(rest[len(found.group(0)):])  # after the tag: -GPTQ-Int8, -bnb-4bit
    value = int(bits.group(1)) if bits and method in ("gptq", "bnb") else DEFAULT_BITS[method]
    return Prequantized(method, value, rest.strip("-_."))


def put_prequantized(d: SpecDraft, found: Prequantized, model_key: KeyPath,
                     quant_keys: tuple[KeyPath, ...] = ()) -> None:
    """The method over a pre-quantized base: written over what the importer set from the
    config (``quant_keys``: its on-the-fly quantization keys, warned as not applying), or
    refused at ``model_key``."""
    kind = d.get(("method", "kind"))
    what = f"pre-quantized checkpoint ({NAMES[found.method]}, {found.bits}-bit: {found.tag})"
    name = d.source.value_at(model_key)
    if kind == "full":
        raise unsupported(d.source, model_key, f"{name} is a {what}: full fine-tuning cannot "
                          "train it (quantized weights take no gradient)",
                          "train LoRA over it, or fully fine-tune the unquantized model")
    if found.method not in ("gptq", "bnb"):
        raise unsupported(d.source, model_key, f"{name} is a {what}: no spec method trains "
                          f"over {NAMES[found.method]} weights (the spec's quantized bases "
                          "are bitsandbytes' (qlora) and GPTQ's (gptq_lora))",
                          "fine-tune the unquantized model, with method.kind qlora for a "
                          "4-bit base")
    if kind == "dora":
        raise unsupported(d.source, model_key, f"{name} is a {what}: DoRA over a quantized "
                          "base has no spec method", "train LoRA over it (drop use_dora)")
    origin = f"{d.origin_of(model_key)} (a {what})"
    for key in quant_keys:
        d.warn(key, f"{key[-1]}: {name} is already a {what}; the checkpoint's own "
               "quantization is used, not this setting")
    d.data.get("method", {}).pop("quantization", None)
    for path in [p for p in d.origins if p[:2] == ("method", "quantization")]:
        del d.origins[path]
    if found.method == "gptq":
        d.put(("method", "kind"), "gptq_lora", origin)
        d.put(("method", "quantization", "bits"), found.bits, origin)
        d.put(("method", "quantization", "quant_type"), "gptq", origin)
        return
    d.put(("method", "kind"), "qlora", origin)
    if found.bits == 8:
        put_int8(d, origin)
    else:
        d.put(("method", "quantization", "bits"), 4, origin)
        d.put(("method", "quantization", "quant_type"), "nf4", origin)
