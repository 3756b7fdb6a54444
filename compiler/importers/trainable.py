"""What trains, read from the flat configs of the HF-based tools: LoRA's target modules,
LoRA+ (``loraplus_lr_ratio``, ``loraplus_lr_embedding``: axolotl, LLaMA-Factory), axolotl's
layer freezing
(``unfrozen_parameters``), LLaMA-Factory's ``finetuning_type: freeze``, and 8-bit bases
(``load_in_8bit``, ``quantization_bit: 8``), as the spec's fields."""

from __future__ import annotations

import re

from ftspec.compiler.importers.base import SpecDraft
from ftspec.compiler.importers.trl_reader import Reader
from ftspec.spec.model.method import ALL_LINEAR

INT8 = {"bits": 8, "quant_type": "int8"}


def put_int8(d: SpecDraft, at: str) -> None:
    """An 8-bit bitsandbytes base (LLM.int8): ``qlora`` with ``bits: 8``."""
    d.put(("method", "quantization", "bits"), 8, at)
    d.put(("method", "quantization", "quant_type"), "int8", f"{at} (bitsandbytes' LLM.int8)")


def put_target_modules(r: Reader, name: str, one_item_is_string: bool = False) -> bool:
    """PEFT's ``target_modules`` as TRL, fms-hf-tuning and axolotl pass it on (False when the
    source names none). A list names modules by their last parts, as the spec does. A string is
    PEFT's ``all-linear`` or else a regular expression that PEFT full-matches against each
    module's whole path (peft ``check_target_module_exists``): a bare name as a string matches
    no module there, and a pattern has no spec field. ``one_item_is_string``: TRL's
    ``ModelConfig`` turns a one-item list into its item before PEFT sees it."""
    value = r.value(name)
    if value is None:
        return False
    if one_item_is_string and isinstance(value, list) and len(value) == 1:
        value = str(value[0])
    d, at, key = r.draft, r.origin(name), (r.key(name) or name,)
    dst = ("method", "lora", "target_modules")
    if not isinstance(value, str):
        d.put(dst, [str(m) for m in value], at)
    elif value == ALL_LINEAR:
        d.put(dst, [ALL_LINEAR], f"{at} (PEFT's all-linear: every linear layer but the output "
              "head)")
    elif re.fullmatch(r"[A-Za-z0-9_]+", value):
        d.put(dst, [value], at)
        d.warn(key, f"{value!r} reaches PEFT as a string, which it reads as a regular "
               "expression over a module's whole path: it matches no module there and the "
               f"source's run stops with no module to adapt; imported as the module name "
               f"[{value}], which adapts every {value}")
    else:
        d.warn(key, f"{value!r} is a regular expression PEFT matches against each module's "
               "whole path, which the spec cannot express: not imported, the spec's default "
               "target_modules train instead (list the module names it matches)")
    return True


def put_loraplus(r: Reader, weight_decay_applies: bool = True) -> None:
    """LoRA+ keys into ``method.lora`` (PEFT's ``create_loraplus_optimizer``, which axolotl
    calls and LLaMA-Factory reimplements with the same groups). ``weight_decay_applies``:
    whether the tool's LoRA+ groups decay (axolotl passes PEFT no weight decay: 0)."""
    d = r.draft
    ratio = r.value("loraplus_lr_ratio")
    if ratio is None:
        if r.has("loraplus_lr_embedding"):
            d.warn((r.key("loraplus_lr_embedding") or "",), "loraplus_lr_embedding without "
                   "loraplus_lr_ratio: LoRA+ is off; not imported")
        return
    if d.get(("method", "kind")) == "full":
        d.warn((r.key("loraplus_lr_ratio") or "",), "loraplus_lr_ratio without an adapter: "
               "the tool ignores it; not imported")
        return
    lora = ("method", "lora")
    r.put(lora + ("loraplus_lr_ratio",), "loraplus_lr_ratio", convert=float)
    r.put(lora + ("loraplus_lr_embedding",), "loraplus_lr_embedding", convert=float)
    decay = d.get(("training", "optimizer", "weight_decay"))
    if not weight_decay_applies and decay:
        d.warn((r.key("loraplus_lr_ratio") or "",), f"the LoRA+ optimizer of {r.tool} applies no "
               f"weight decay (PEFT's loraplus_weight_decay 0); the spec's weight_decay "
               f"{decay} decays LoRA+'s groups: set training.optimizer.weight_decay: 0 to "
               "train as the tool does")


def axolotl_pattern(pattern: str) -> tuple[str, str | None]:
    """An axolotl ``unfrozen_parameters`` entry as the spec's regular expression (axolotl
    reads a period as a literal period unless a ``+`` follows it, and matches at the start of
    the name, as the spec does), and its ``[start:end]`` row range, which the spec lacks."""
    ranged = re.match(r"^(.+)\[([0-9]*)(?::([0-9]*))?\]$", pattern)
    name = ranged.group(1) if ranged else pattern
    return re.sub(r"\.(?!\+)", r"\\.", name), (pattern[len(name):] if ranged else None)


def put_unfrozen(r: Reader) -> None:
    """axolotl's ``unfrozen_parameters`` (applied to the model it trains, adapter included,
    as the spec's patterns are)."""
    d = r.draft
    raw = r.value("unfrozen_parameters")
    if raw is None:
        return
    patterns = [raw] if isinstance(raw, str) else list(raw)
    out = []
    for i, pattern in enumerate(patterns):
        spec_pattern, rows = axolotl_pattern(str(pattern))
        out.append(spec_pattern)
        if rows is not None:
            d.warn(("unfrozen_parameters", i), f"{pattern}: the row range {rows} (only those "
                   "rows of the tensor train) has no spec field: the whole tensor trains")
    d.put(("method", "unfrozen_parameters"), out, r.origin("unfrozen_parameters") +
          " (axolotl's patterns: periods literal, matched at the name's start)")
    if d.get(("method", "kind")) != "full" and not any(
            p.startswith(("base_model", "^base_model")) for p in out):
        d.warn(("unfrozen_parameters",), "with an adapter the patterns are matched against "
               "PEFT's parameter names (base_model.model.…), as axolotl matches them once it "
               "has loaded the adapter: patterns for the base model's own names select "
               "nothing there, and the run refuses to start with nothing to train (prefix "
               "them with ^base_model\\.model\\. to mean the base model's parameters)")


def num_layers(d: SpecDraft) -> int | None:
    """The model's layer count: its catalog family's, or ``model.architecture``'s."""
    from ftspec.spec.catalog.models import MODEL_FAMILIES

    family = MODEL_FAMILIES.get(str(d.get(("model", "family"))))
    if family is not None:
        return int(family.num_layers)
    layers = d.get(("model", "architecture", "num_layers"))
    return layers if isinstance(layers, int) else None


def llamafactory_freeze(r: Reader, num_layers: int | None) -> list[str] | None:
    """``finetuning_type: freeze`` as ``unfrozen_parameters``: LLaMA-Factory trains the
    parameters whose name contains ``.{layer}.{module}`` for the last
    ``freeze_trainable_layers`` layers (the first ones if negative; default 2), modules
    ``freeze_trainable_modules`` (default all), plus ``freeze_extra_modules``; with
    ``use_llama_pro``, evenly spaced layers instead (``freeze_layer_ids``). None: the layer
    count is unknown (no catalog family, no architecture), or LLaMA Pro's stride does not
    divide it."""
    if num_layers is None:
        return None
    n = int(r.value("freeze_trainable_layers") or 2)
    modules = [m.strip() for m in str(r.value("freeze_trainable_modules") or "all").split(",")]
    extra = r.value("freeze_extra_modules")
    ids = freeze_layer_ids(num_layers, n, r.value("use_llama_pro") is True)
    if ids is None:
        return None
    layers = "|".join(str(i) for i in ids)
    mods = "" if modules == ["all"] else "(" + "|".join(re.escape(m) for m in modules) + ")"
    out = [rf".*\.({layers})\.{mods}"]
    if isinstance(extra, str):
        out += [rf".*{re.escape(m.strip())}" for m in extra.split(",") if m.strip()]
    return out


def freeze_layer_ids(num_layers: int, n: int, llama_pro: bool) -> range | None:
    """The layers LLaMA-Factory's freeze tuning trains (``model/adapter.py``,
    ``_setup_freeze_tuning``): with ``use_llama_pro``, every ``num_layers // n``-th layer
    counted from the stride's end (the blocks LLaMA Pro's expansion inserted; None when ``n``
    does not divide the layer count, which LLaMA-Factory refuses); else the last ``n`` layers,
    or the first ``-n`` when negative."""
    if llama_pro:
        if n <= 0 or num_layers % n:
            return None
        stride = num_layers // n
        return range(stride - 1, num_layers + stride - 1, stride)
    return range(max(0, num_layers - n), num_layers) if n > 0 else range(min(-n, num_layers))
