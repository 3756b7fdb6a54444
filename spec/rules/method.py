"""Method settings belong to their method: LoRA settings only with LoRA-family methods."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.catalog.family import FUSED_MLP_LAYERS, SHARED_EXPERT_MLP_LAYERS
from ftspec.spec.catalog.models import MODEL_FAMILIES
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.method import ALL_LINEAR, LORA_FAMILY, QUANTIZED_LORA, Method
from ftspec.spec.module_names import MLP_MODULES
from ftspec.spec.rules._diag import error, warning


def settings_match_method(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    m = spec.method
    kind = m.kind
    if m.lora is not None and kind not in LORA_FAMILY:
        yield error(
            ("method", "lora"),
            f"LoRA settings given but method.kind is {kind}",
            "lora-without-lora",
            hint="remove method.lora, or set method.kind to lora, qlora, dora or gptq_lora",
        )
    needs_quant = kind in QUANTIZED_LORA
    if needs_quant and m.quantization is None:
        yield error(
            ("method", "kind"),
            f"{kind} needs method.quantization (4-bit base-model settings)",
            "quantization-required",
            hint="add method.quantization: {bits: 4, quant_type: nf4}"
            if kind == "qlora" else "add method.quantization: {bits: 4, quant_type: gptq}",
        )
    if m.quantization is not None:
        q = m.quantization
        if not needs_quant:
            yield error(
                ("method", "quantization"),
                f"base-model quantization is only used by qlora and gptq_lora, not {kind}",
                "quantization-unused",
            )
        elif kind == "qlora" and (q.bits, q.quant_type) not in (
                (4, "nf4"), (4, "fp4"), (8, "int8")):
            yield error(
                ("method", "quantization"),
                f"qlora quantizes with bitsandbytes: 4-bit nf4 / fp4 or 8-bit int8, got "
                f"{q.bits}-bit {q.quant_type}",
                "qlora-4bit",
                hint="bits: 8 goes with quant_type: int8 (LLM.int8); bits: 4 with nf4 or fp4",
            )
        elif kind == "gptq_lora" and q.quant_type != "gptq":
            yield error(
                ("method", "quantization", "quant_type"),
                "gptq_lora needs quant_type: gptq (a GPTQ-quantized base model)",
                "gptq-quant-type",
            )
    if m.lora is not None and ALL_LINEAR in m.lora.target_modules:
        if len(m.lora.target_modules) > 1:
            yield error(("method", "lora", "target_modules"), f"{ALL_LINEAR} stands alone: "
                        "it already selects every linear layer", "all-linear-alone",
                        hint=f"target_modules: [{ALL_LINEAR}]")
        if m.lora.output:
            yield error(("method", "lora", "output"), f"target_modules [{ALL_LINEAR}] leaves "
                        "the output head out (PEFT's all-linear) and cannot be combined with "
                        "output: true", "all-linear-output",
                        hint="list the modules by name to adapt the output head too")
    yield from _trainable(m)
    if m.prompt_tuning is not None and kind != "prompt_tuning":
        yield error(("method", "prompt_tuning"),
                    f"prompt-tuning settings given but method.kind is {kind}",
                    "prompt-tuning-unused")
    if m.ia3 is not None and kind != "ia3":
        yield error(("method", "ia3"), f"IA3 settings given but method.kind is {kind}",
                    "ia3-unused")
    pt = m.prompt_tuning
    if pt is not None and pt.init == "text" and not pt.init_text:
        yield error(("method", "prompt_tuning", "init_text"),
                    "prompt_tuning.init is text but init_text is empty", "prompt-init-text")


def _trainable(m: Method) -> Iterator[Diagnostic]:
    """LoRA+ needs a LoRA adapter's B matrices; freezing patterns must be regular
    expressions (they are compiled where the job runs: a bad one is caught here)."""
    import re

    lora = m.lora
    if lora is not None and lora.loraplus_lr_embedding is not None \
            and lora.loraplus_lr_ratio is None:
        yield error(("method", "lora", "loraplus_lr_embedding"), "loraplus_lr_embedding is "
                    "a LoRA+ setting: it needs loraplus_lr_ratio", "loraplus-embedding-alone",
                    hint="set method.lora.loraplus_lr_ratio, or remove loraplus_lr_embedding")
    for i, pattern in enumerate(m.unfrozen_parameters):
        try:
            re.compile(pattern)
        except re.error as e:
            yield error(("method", "unfrozen_parameters", i), f"not a regular expression: "
                        f"{e}", "unfrozen-pattern",
                        hint="a Python regular expression matched at the start of a "
                        "parameter's name, e.g. ^model\\.layers\\.(2[4-9]|3[01])\\.")


def lora_targets_reachable(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    """A mixture of experts' MLP projections are fused 3-D expert parameters in
    transformers 5, not linear layers: LoRA's gate/up/down_proj adapt nothing there; nor on
    a Granite 4.0 (dense too), whose MLP is a fused ``input_linear`` / ``output_linear``."""
    lora = spec.method.lora
    if lora is None or spec.method.kind not in LORA_FAMILY:
        return
    arch = spec.model.architecture
    family = MODEL_FAMILIES.get(spec.model.family or "") or (
        arch.as_family() if arch is not None else None)
    fused_mlp = family is not None and family.hf_layer_cls in FUSED_MLP_LAYERS
    if family is None or not (family.num_experts or fused_mlp):
        return
    named = [n for n in lora.target_modules if n in MLP_MODULES]
    if not named and not lora.mlp:
        return
    path = ("method", "lora", "mlp" if lora.mlp and not named else "target_modules")
    missed = "/".join(named or MLP_MODULES)
    if not family.num_experts:
        yield warning(path, f"{family.display}'s MLP is one fused shared_mlp.input_linear / "
                      f"output_linear, not gate/up/down projections: LoRA adapts no {missed} "
                      "there (PEFT skips them, or fails when nothing else is targeted)",
                      "lora-fused-mlp", hint="target [all-linear] to adapt the MLP too, or "
                      "the attention projections only")
        return
    if family.hf_layer_cls in SHARED_EXPERT_MLP_LAYERS:
        yield warning(path, f"{family.display} keeps its routed experts as fused parameters, "
                      f"not linear layers: LoRA adapts only the shared expert's {missed}",
                      "lora-moe-experts", hint="the routed experts stay frozen under LoRA; "
                      "full fine-tuning trains them")
        return
    yield warning(path, f"{family.display} keeps its experts as fused parameters, not linear "
                  f"layers: LoRA adapts no {missed} there (PEFT "
                  "skips them, or fails when nothing else is targeted)", "lora-moe-experts",
                  hint="target the attention projections (q_proj, k_proj, v_proj, o_proj)")
