"""``model``: what is fine-tuned and how it is loaded."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from ftspec.spec.catalog.blocks import MambaFacts, VisionFacts
from ftspec.spec.catalog.family import ModelFamily, param_count
from ftspec.spec.catalog.models import FAMILY_NAMES_WRITTEN, resolve_family
from ftspec.spec.model.base import URI_PATTERN, InputIdentity, SpecModel, identity_field
from pydantic import Field, field_validator

FamilyName = Literal[FAMILY_NAMES_WRITTEN]  # type: ignore[valid-type]

Dtype = Literal["bf16", "fp16", "fp32"]
PrecisionMode = Literal["pure", "mixed", "autocast"]


class MambaLayers(SpecModel):
    """The Mamba-2 layers of a hybrid Mamba-2 / attention stack (Granite 4.0-H, Bamba): the
    ``mamba_*`` numbers of its config.json. heads x head_dim is the inner width
    (``mamba_expand`` x embed_dim)."""

    attention_layers: list[int] = Field(
        description="Indices of the attention layers (config.json layer_types); every other "
        "layer is Mamba-2."
    )
    state_size: int = Field(ge=1, description="SSM state per head and group (mamba_d_state).")
    conv_kernel: int = Field(default=4, ge=1, description="Causal convolution width (mamba_d_conv).")
    n_groups: int = Field(default=1, ge=1, description="Groups sharing B and C (mamba_n_groups).")
    num_heads: int = Field(ge=1, description="SSM heads (mamba_n_heads).")
    head_dim: int = Field(ge=1, description="Channels per SSM head (mamba_d_head).")
    chunk_size: int = Field(default=256, ge=1, description="SSD scan chunk (mamba_chunk_size).")

    def facts(self) -> MambaFacts:
        return MambaFacts(tuple(self.attention_layers), self.state_size, self.conv_kernel,
                          self.n_groups, self.num_heads, self.head_dim, self.chunk_size)


class VisionTower(SpecModel):
    """A vision-language model's image encoder and projector (LLaVA / LLaVA-NeXT shape: the
    ``vision_config`` of its config.json)."""

    hidden_size: int = Field(ge=8, description="Encoder width.")
    num_layers: int = Field(ge=1, description="Encoder layers.")
    intermediate_size: int = Field(ge=8, description="Encoder MLP inner size.")
    num_heads: int = Field(ge=1, description="Encoder attention heads.")
    patch_size: int = Field(ge=1, description="Pixels a side per patch token.")
    image_size: int = Field(ge=1, description="The encoder's input tile, pixels a side.")
    feature_layers: int = Field(
        default=1, ge=1, description="Encoder layers concatenated into the projector's input "
        "(vision_feature_layer: 1, or the list's length)."
    )
    projector: Literal["mlp2x_gelu"] = Field(
        default="mlp2x_gelu", description="LLaVA's two-layer GELU projector to the text width."
    )
    anyres: bool = Field(
        default=False, description="LLaVA-NeXT tiling (image_grid_pinpoints): a base tile, a "
        "grid of tiles and a newline token per row; false: one tile (LLaVA 1.5)."
    )
    class_embedding: bool = Field(default=False, description="The encoder prepends a learned class embedding to the patches (CLIP).")

    def facts(self) -> VisionFacts:
        return VisionFacts(self.hidden_size, self.num_layers, self.intermediate_size,
                           self.num_heads, self.patch_size, self.image_size,
                           self.feature_layers, self.anyres, self.class_embedding)


class Architecture(SpecModel):
    """The numbers of a model outside the catalog (config.json facts): the memory estimate
    reads them. With ``base``, the torchtune launcher builds a model of these dimensions
    (tiny test models); without it, any causal LM trains through the accelerate launcher."""

    base: Literal["llama2", "llama3_2"] | None = Field(
        default=None,
        description="torchtune builder the dimensions apply to (custom models on torchtune); "
        "leave out for any other model (accelerate launcher).",
    )
    num_layers: int = Field(ge=1, description="Transformer layers.")
    num_heads: int = Field(ge=1, description="Attention heads.")
    num_kv_heads: int = Field(ge=1, description="Key/value heads (grouped-query attention).")
    embed_dim: int = Field(ge=8, description="Hidden size.")
    intermediate_dim: int = Field(ge=8, description="MLP inner size (per expert for MoE).")
    vocab_size: int = Field(ge=2, description="Vocabulary size; must match the tokenizer.")
    max_seq_len: int = Field(ge=8, description="Longest sequence the model supports.")
    head_dim: int | None = Field(
        default=None, ge=1, description="Attention head size when not embed_dim / num_heads."
    )
    tied_embeddings: bool | None = Field(
        default=None, description="The output projection shares the embedding's weights "
        "(default: as the base builds it — llama3_2 tied, llama2 not —, else untied)."
    )

    @property
    def tied(self) -> bool:
        if self.tied_embeddings is not None:
            return self.tied_embeddings
        return self.base == "llama3_2"

    def as_family(self) -> ModelFamily:
        """These numbers as a catalog entry, its parameter count computed from them."""
        numbers = ModelFamily(
            "custom", f"custom {self.base or 'model'} ({self.num_layers} layers, "
            f"d={self.embed_dim})", 0.0, self.num_layers, self.embed_dim, self.num_heads,
            self.num_kv_heads, self.intermediate_dim, self.vocab_size, self.max_seq_len,
            self.layer_cls or ("LlamaDecoderLayer" if self.base else ""),
            num_experts=self.num_experts, head_dim=self.head_dim, tied_embeddings=self.tied,
            gated_mlp=self.gated_mlp, arch="",
            shared_intermediate_size=self.shared_expert_dim,
            mamba=self.mamba.facts() if self.mamba else None,
            vision=self.vision.facts() if self.vision else None)
        return replace(numbers, params_b=param_count(numbers) / 1e9)
    num_experts: int = Field(default=0, ge=0, description="Experts per MoE layer (0: dense).")
    shared_expert_dim: int = Field(
        default=0, ge=0, description="MoE: a shared expert's MLP size beside the routed ones "
        "(shared_intermediate_size; Granite 4.0)."
    )
    mamba: MambaLayers | None = Field(
        default=None, description="Hybrid Mamba-2 / attention stack: its Mamba-2 layers."
    )
    vision: VisionTower | None = Field(
        default=None, description="Vision-language model: its image encoder and projector."
    )
    gated_mlp: bool = Field(
        default=True, description="Gated MLP (gate/up/down) rather than plain (up/down)."
    )
    layer_cls: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="Decoder layer class FSDP wraps (transformers name, e.g. "
        "Qwen3DecoderLayer); default: LlamaDecoderLayer with `base`, else the model's own "
        "_no_split_modules.",
    )


class Tokenizer(SpecModel):
    uri: str | None = Field(
        default=None,
        pattern=URI_PATTERN,
        description="Tokenizer file or folder; defaults to the model's own tokenizer.",
    )
    special_tokens_uri: str | None = Field(
        default=None,
        pattern=URI_PATTERN,
        description="Special-tokens JSON (Llama 3 tiktoken tokenizers).",
    )
    pad_token: str | None = Field(default=None, description="Override the padding token.")
    identity: InputIdentity = identity_field()


class ModelSpec(SpecModel):
    uri: str = Field(
        pattern=URI_PATTERN,
        description="Where the weights come from: hf://org/name, s3://bucket/path, "
        "pvc://claim/path or file://path (local backend; relative to the working directory).",
    )
    identity: InputIdentity = identity_field()
    family: FamilyName | None = Field(
        default=None,
        description="Known model family (see `ftspec explain`); sets architecture facts, the "
        "torchtune config and FSDP wrap class. Required unless `architecture` is given.",
    )
    architecture: Architecture | None = Field(
        default=None, description="Custom dimensions instead of a known family."
    )

    @field_validator("family")
    @classmethod
    def _catalog_key(cls, value: str | None) -> str | None:
        """An alias (the SFTTrainer actuator's short name, a Hugging Face repo id) becomes
        the catalog's key."""
        return None if value is None else resolve_family(value)
    params_b: float | None = Field(
        default=None,
        gt=0,
        description="Parameter count in billions, overriding the family's (memory estimate).",
    )
    dtype: Dtype = Field(
        default="bf16",
        description="Training precision: the dtype the model computes in (torchtune `dtype`, "
        "TRL `bf16`/`fp16`, accelerate `mixed_precision`); see `precision` for what is stored.",
    )
    precision: PrecisionMode | None = Field(
        default=None,
        description="How `dtype` is kept. pure: weights, gradients and optimizer state in "
        "`dtype`, no autocast (torchtune; Oumi/fms-hf-tuning loading `torch_dtype: bfloat16`; "
        "on TRL, PEFT keeps LoRA adapters in fp32). "
        "mixed: fp32 master weights and optimizer state, `dtype` compute under autocast "
        "(accelerate/TRL only). "
        "autocast: weights, gradients and optimizer state in `dtype` as under pure, and "
        "compute under autocast in `dtype`, so the ops on torch's autocast fp32 list "
        "(softmax, log_softmax, layer_norm, the losses) run in fp32 (HF Trainer `bf16: true` "
        "over bf16-loaded weights, as axolotl and LLaMA-Factory LoRA train; accelerate/TRL "
        "and fms-hf-tuning only; fp16 only for the PEFT adapter methods without lora.bias or "
        "modules_to_save: the fp16 loss scaler unscales the fp32 adapters PEFT keeps, not "
        "fp16 weights). Default: mixed for fp16 (pure fp16 has no loss scaling), pure otherwise.",
    )
    revision: str | None = Field(default=None, description="Hub revision, tag or commit.")
    auto_class: Literal[
        "AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModelForVision2Seq"
    ] = Field(default="AutoModelForCausalLM", description="Hugging Face auto class used to load it.")
    attn_implementation: Literal["sdpa", "eager", "flash_attention_2"] | None = Field(
        default=None, description="Attention kernel (Hugging Face launchers)."
    )
    trust_remote_code: bool = Field(
        default=False, description="Allow model code from the hub (trusted models only)."
    )
    device_map: Literal["auto"] | None = Field(
        default=None, description="Hugging Face device_map for single-process loading."
    )
    use_cache: bool = Field(default=False, description="Keep the KV cache during training.")
    chat_template: str | None = Field(
        default=None,
        description="Chat data's template: unset = the tokenizer's own; a name (llama2, "
        "mistral, chatml: torchtune's prompt template classes, laid out token for token the "
        "same under accelerate); inline Jinja (contains '{') or a file / tokenizer folder "
        "(accelerate only: torchtune cannot read Jinja).",
    )
    tokenizer: Tokenizer = Field(
        default_factory=Tokenizer, description="Tokenizer location and options."
    )

    @property
    def precision_mode(self) -> PrecisionMode:
        """``precision`` with its default resolved: mixed for fp16, pure otherwise."""
        if self.precision is not None:
            return self.precision
        return "mixed" if self.dtype == "fp16" else "pure"

    @property
    def autocasts(self) -> bool:
        """Compute runs under autocast in ``dtype``: over fp32 weights (mixed) or over
        weights stored in ``dtype`` itself (autocast)."""
        return self.precision_mode in ("mixed", "autocast")
