"""Method settings belong to their method: LoRA settings only with LoRA-family methods."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.method import ALL_LINEAR, LORA_FAMILY, QUANTIZED_LORA
from ftspec.spec.rules._diag import error


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
        elif kind == "qlora" and (q.bits != 4 or q.quant_type not in ("nf4", "fp4")):
            yield error(
                ("method", "quantization"),
                f"qlora needs 4-bit nf4 or fp4 quantization, got {q.bits}-bit {q.quant_type}",
                "qlora-4bit",
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
