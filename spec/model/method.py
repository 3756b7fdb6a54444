"""``method``: full fine-tuning or a parameter-efficient method and its settings."""

from __future__ import annotations

from typing import Literal

from ftspec.spec.model.base import SpecModel
from pydantic import Field

MethodKind = Literal["full", "lora", "qlora", "dora", "gptq_lora", "ia3", "prompt_tuning"]
LORA_FAMILY: frozenset[str] = frozenset({"lora", "qlora", "dora", "gptq_lora"})
"""The methods that train LoRA adapters (``method.lora`` applies): spelled here only."""
QUANTIZED_LORA: frozenset[str] = frozenset({"qlora", "gptq_lora"})
"""The LoRA methods over a quantized base model (``method.quantization`` required)."""
PEFT_ADAPTERS: frozenset[str] = LORA_FAMILY | {"ia3", "prompt_tuning"}
"""The methods that train adapters over a frozen base model. On the Hugging Face launchers
PEFT builds them and keeps them in fp32 over a 16-bit base (``autocast_adapter_dtype``)."""
ALL_LINEAR = "all-linear"
"""PEFT's word for every linear layer of the model but the output head (``target_modules:
[all-linear]``): PEFT finds them itself, whatever the architecture calls them."""


class Lora(SpecModel):
    rank: int = Field(default=8, ge=1, le=1024, description="Rank r of the update matrices.")
    alpha: float = Field(default=16, gt=0, description="Scaling: updates are scaled by alpha/r.")
    dropout: float = Field(default=0.05, ge=0, lt=1, description="Dropout on the LoRA input.")
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "v_proj"],
        min_length=1,
        description="Hugging Face module names to adapt (q_proj, k_proj, v_proj, o_proj, "
        "gate_proj, up_proj, down_proj); targets translate them (torchtune: o_proj -> "
        "output_proj). [all-linear]: every linear layer but the output head, as PEFT's "
        "all-linear finds them (torchtune: the attention projections and the MLP).",
    )
    mlp: bool = Field(
        default=False, description="Also adapt the MLP (gate/up/down projections)."
    )
    output: bool = Field(default=False, description="Also adapt the final output projection.")
    bias: Literal["none", "all", "lora_only"] = Field(
        default="none", description="Which biases are trained."
    )
    modules_to_save: list[str] = Field(
        default_factory=list, description="Extra modules trained in full and saved."
    )
    init_weights: Literal["default", "gaussian", "pissa", "olora"] = Field(
        default="default", description="Initialization of the LoRA matrices."
    )
    loraplus_lr_ratio: float | None = Field(
        default=None, gt=0,
        description="LoRA+: each adapter's B matrix trains at this multiple of the learning "
        "rate (A at the rate itself), through PEFT's create_loraplus_optimizer (accelerate "
        "launcher). Unset: plain LoRA.",
    )
    loraplus_lr_embedding: float | None = Field(
        default=None, gt=0,
        description="LoRA+: the learning rate of adapters on embedding layers (unset: "
        "PEFT's 1e-6). Only with loraplus_lr_ratio.",
    )


class Quantization(SpecModel):
    """Base-model quantization for QLoRA (bitsandbytes / torchao NF4) or GPTQ-LoRA."""

    bits: Literal[4, 8] = Field(default=4, description="Bits per base weight.")
    quant_type: Literal["nf4", "fp4", "int8", "gptq"] = Field(
        default="nf4",
        description="Quantization data type: nf4 / fp4 (4-bit bitsandbytes), int8 (bits: 8, "
        "bitsandbytes' LLM.int8), gptq (pre-quantized GPTQ models).",
    )
    double_quant: bool = Field(
        default=True, description="Quantize the quantization constants too (nested quant)."
    )
    compute_dtype: Literal["bf16", "fp16", "fp32"] = Field(
        default="bf16", description="Dtype matmuls run in."
    )
    storage_dtype: Literal["uint8", "bf16", "fp16", "fp32"] = Field(
        default="uint8", description="Storage type of packed weights."
    )


class PromptTuning(SpecModel):
    num_virtual_tokens: int = Field(default=20, ge=1, description="Trainable prompt length.")
    init: Literal["random", "text"] = Field(default="random", description="Initialization.")
    init_text: str | None = Field(default=None, description="Text to initialize from (init=text).")


class IA3(SpecModel):
    target_modules: list[str] = Field(
        default_factory=lambda: ["k_proj", "v_proj", "down_proj"],
        min_length=1,
        description="Modules whose activations are rescaled.",
    )
    feedforward_modules: list[str] = Field(
        default_factory=lambda: ["down_proj"], description="Which targets are feed-forward."
    )


class Method(SpecModel):
    kind: MethodKind = Field(
        default="lora",
        description="full: every weight; lora/dora: low-rank adapters; qlora: LoRA on a "
        "bitsandbytes-quantized base (4-bit nf4 / fp4, or 8-bit int8); gptq_lora: LoRA on a "
        "GPTQ base; ia3; prompt_tuning.",
    )
    lora: Lora | None = Field(
        default=None, description="LoRA settings (lora, qlora, dora, gptq_lora only)."
    )
    quantization: Quantization | None = Field(
        default=None, description="Base-model quantization (required for qlora, gptq_lora)."
    )
    prompt_tuning: PromptTuning | None = Field(
        default=None, description="Prompt-tuning settings (prompt_tuning only)."
    )
    ia3: IA3 | None = Field(default=None, description="IA3 settings (ia3 only).")
    task_type: Literal["CAUSAL_LM", "SEQ_2_SEQ_LM"] = Field(
        default="CAUSAL_LM", description="PEFT task type."
    )
    unfrozen_parameters: list[str] = Field(
        default_factory=list,
        description="Layer freezing: Python regular expressions, each matched at the start of "
        "a parameter's name (re.match) as the training model names it (with an adapter, "
        "PEFT's names: base_model.model.…); only parameters matching one train, every other "
        "is frozen (accelerate launcher). Empty: every parameter of the method trains.",
    )

    @property
    def lora_settings(self) -> Lora:
        """``lora``, or the LoRA defaults (this model's field defaults, the one place)."""
        return self.lora if self.lora is not None else Lora()
