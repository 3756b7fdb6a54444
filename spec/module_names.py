"""The one table of a decoder block's linear module names, as Hugging Face (and ftspec's
``method.lora.target_modules``) spell them: the attention projections and the MLP's.

LoRA's module list (``Job.lora_modules``), its rules, the memory estimate's parameter names
and the launchers' translations (torchtune's ``apply_lora_to_mlp``) read these.
"""

from __future__ import annotations

ATTENTION_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")
"""Query, key, value and output projections."""
MLP_MODULES = ("gate_proj", "up_proj", "down_proj")
"""The (gated) MLP's projections; an ungated MLP has up_proj and down_proj only."""
LINEAR_MODULES = ATTENTION_MODULES + MLP_MODULES
"""Every linear layer of a decoder block (what ``all-linear`` adapts)."""
