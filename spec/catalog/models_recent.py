"""Recent models the importers' corpora train (alignment-handbook, axolotl recipes), each
taken from the model's own published numbers (``source`` names the Hugging Face repo;
``verified.py`` names the public copy of its ``config.json`` compared number by number).

What the memory estimate prices for them, beyond a dense decoder's terms:

- SmolLM3 leaves rotary embeddings out of every fourth layer (``no_rope_layers``): a
  position encoding computed on the fly, no parameter and no saved activation, so its
  layers are priced as Llama's.
- gpt-oss alternates 128-token sliding-window and full attention (``layer_types``); a
  flash / memory-efficient kernel saves q, k, v, its output and the log-sum-exp whatever
  the window (Dao 2023, "FlashAttention-2", sec. 3.1: the backward recomputes the
  attention matrix from them), so the window changes no training-memory term. Its
  attention sinks are one learned logit per head and layer (``GptOssAttention.sinks``:
  64 x 24 = 1,536 parameters, under 1e-7 of the model, no per-token tensor beyond the
  kernel's log-sum-exp), left out like biases. The experts are published in MXFP4
  (``quantization_config``) and fine-tuned dequantized to bf16 (transformers'
  ``Mxfp4Config(dequantize=True)``, as axolotl's gpt-oss recipes load it), which is what
  the estimate prices at ``model.dtype: bf16``; each expert is a gated MLP (``gate_up_proj``
  of 2 x I by h, ``down_proj`` of h by I: 3hI) beside a router of h x experts.
- OLMo 3 interleaves 4096-token sliding-window and full attention (three to one,
  ``layer_types``) as gpt-oss does, which changes no training-memory term (above); its
  query and key norms span the whole projection (``q_norm`` of heads x head size), norms
  the estimate leaves out as it leaves out every norm. The 7B has no grouped-query
  attention (32 KV heads of 32); its numbers are transcribed from a public source, not a
  ``config.json`` copy (``verified.TRANSCRIBED``).
- Mistral Small 3 (2501) is a Mistral decoder with 128-wide heads (32 of them over a 5120
  width) and 32768 positions; its numbers are transcribed from the checkpoint's
  ``params.json``, not a ``config.json`` copy (``verified.TRANSCRIBED``).
- Devstral Small is Mistral Small 3.1's text decoder (its vision encoder removed, the
  model card says): a Mistral decoder with 128-wide heads.
- Llama 4 Scout is a vision-language checkpoint; the entry is its text decoder, as the
  Gemma 3 "(text)" entries are: the vision encoder (34 layers of 1408, a pixel-shuffle
  adapter and a projector: 0.87B, 0.8% of the model; 144 tokens a 336-pixel tile) is not
  priced. Every layer is a mixture of experts (``interleave_moe_layer_step`` 1): 16 routed
  experts of 8192, one per token, beside one shared expert of the same size
  (``Llama4TextMoe.shared_expert``), which the catalog keeps as Granite 4.0's shared MLP; the
  routed experts are fused 3-D parameters (``Llama4TextExperts``) that LoRA does not reach,
  as for the other MoE entries, but the shared expert's ``gate_proj`` / ``up_proj`` /
  ``down_proj`` are linear layers LoRA's names reach, and its router is one that
  ``all-linear`` adapts (``family.SHARED_EXPERT_MLP_LAYERS``, ``LINEAR_ROUTER_LAYERS``;
  ``compiler/memory_lora.py`` prices both). Its query / key L2 norms have no
  weights; its chunked attention (8192-token chunks on three layers in four) changes no
  training-memory term, as a sliding window does not (above).
- Llama 4 Maverick (its text decoder, as Scout's) alternates dense layers and MoE ones
  (``interleave_moe_layer_step`` 2: MoE on the odd layers, transformers' ``moe_layers``): 24
  MoE layers of 128 routed experts of 8192 (one per token) beside a shared expert of 8192,
  and 24 dense gated MLPs of 16384 (``intermediate_size_mlp``; ``moe_layer_step``,
  ``dense_intermediate_size``). The parameter count, expert parallelism's split and LoRA's
  adapters count the two kinds apart; the saved activations need not, since one routed
  expert and the shared one save what a dense MLP of their summed width, 16384, saves. The
  text decoder has 400.71B parameters (the published 400B; 401.58B with the vision tower).
- Qwen3.5 (9B, 27B) is a vision-language checkpoint; the entries are its text decoders, as
  Llama 4 Scout's is (the vision tower, 27 layers of 1152: 0.46B, not priced). Three layers
  in four are Gated DeltaNet linear attention (``layer_types``; ``blocks.LinearAttentionFacts``
  from the config's ``linear_*`` numbers, priced by ``compiler/memory_arch.py``) and every
  fourth is full attention whose output is gated per channel (``attn_output_gate``: ``q_proj``
  twice the query width). The published sizes (9B, 27B) count the tower: transformers builds
  9.41B and 27.36B from the whole configs, 8.95B and 26.90B for the text decoders (the
  entries' ``params_b``). Its multi-token prediction layer (``mtp_num_hidden_layers``) is not
  built by transformers, so not fine-tuned or priced.
"""

from __future__ import annotations

from ftspec.spec.catalog.blocks import LinearAttentionFacts
from ftspec.spec.catalog.family import ModelFamily
from ftspec.spec.catalog.family import make as _m


def _qwen3_5_linear(layers: int, value_heads: int) -> LinearAttentionFacts:
    """Qwen3.5's Gated DeltaNet layers: three in four (``full_attention_interval`` 4, full
    attention on every fourth), 16 query/key heads of 128, value heads of 128, kernel 4."""
    return LinearAttentionFacts(tuple(range(3, layers, 4)), 16, value_heads, 128, 128, 4)


RECENT_FAMILIES: tuple[ModelFamily, ...] = (
    _m("smollm3-3b", "SmolLM3 3B", 3.08, 36, 2048, 16, 4, 11008, 128256, 65536,
       "SmolLM3DecoderLayer", arch="smollm3", tied=True, source="hf:HuggingFaceTB/SmolLM3-3B"),
    _m("gpt-oss-20b", "gpt-oss-20b (MoE)", 20.9, 24, 2880, 64, 8, 2880, 201088, 131072,
       "GptOssDecoderLayer", arch="gpt_oss", head_dim=64, experts=(32, 4),
       source="hf:openai/gpt-oss-20b"),
    _m("gpt-oss-120b", "gpt-oss-120b (MoE)", 116.8, 36, 2880, 64, 8, 2880, 201088, 131072,
       "GptOssDecoderLayer", arch="gpt_oss", head_dim=64, experts=(128, 4),
       source="hf:openai/gpt-oss-120b"),
    _m("devstral-small", "Devstral Small 1.1 (24B)", 24.0, 40, 5120, 32, 8, 32768, 131072,
       131072, "MistralDecoderLayer", arch="mistral", head_dim=128,
       source="hf:mistralai/Devstral-Small-2507"),
    _m("mistral-small-24b-2501", "Mistral Small 3 (24B, 2501)", 23.57, 40, 5120, 32, 8, 32768,
       131072, 32768, "MistralDecoderLayer", arch="mistral", head_dim=128,
       source="hf:mistralai/Mistral-Small-24B-Instruct-2501"),
    _m("olmo3-7b", "OLMo 3 7B", 7.3, 32, 4096, 32, 32, 11008, 100278, 65536,
       "Olmo3DecoderLayer", arch="olmo3", source="hf:allenai/Olmo-3-1025-7B"),
    _m("olmo3-32b", "OLMo 3 32B", 32.2, 64, 5120, 40, 8, 27648, 100278, 65536,
       "Olmo3DecoderLayer", arch="olmo3", source="hf:allenai/Olmo-3-1125-32B"),
    _m("llama4-scout-17b-16e", "Llama 4 Scout 17B-16E (text)", 107.77, 48, 5120, 40, 8, 8192,
       202048, 10485760, "Llama4TextDecoderLayer", arch="llama4_text", experts=(16, 1),
       shared=8192, source="hf:meta-llama/Llama-4-Scout-17B-16E"),
    _m("llama4-maverick-17b-128e", "Llama 4 Maverick 17B-128E (text)", 400.71, 48, 5120, 40, 8,
       8192, 202048, 1048576, "Llama4TextDecoderLayer", arch="llama4_text", experts=(128, 1),
       shared=8192, moe_every=(2, 16384), source="hf:meta-llama/Llama-4-Maverick-17B-128E"),
    _m("qwen3_5-9b", "Qwen3.5 9B (text)", 8.95, 32, 4096, 16, 4, 12288, 248320, 262144,
       "Qwen3_5DecoderLayer", arch="qwen3_5_text", head_dim=256, gate=True,
       linear=_qwen3_5_linear(32, 32), source="hf:Qwen/Qwen3.5-9B"),
    _m("qwen3_5-27b", "Qwen3.5 27B (text)", 26.9, 64, 5120, 24, 4, 17408, 248320, 262144,
       "Qwen3_5DecoderLayer", arch="qwen3_5_text", head_dim=256, gate=True,
       linear=_qwen3_5_linear(64, 48), source="hf:Qwen/Qwen3.5-27B"),
)
"""Each compared with its config.json (``verified.py``), OLMo 3 7B and Mistral Small 3 with
the numbers another public source states (``verified.TRANSCRIBED``); Devstral Small 2507's numbers also
agree with its ``params.json`` (Mistral's own format) and its card (128k context,
text-only, 24B parameters) beside it."""
