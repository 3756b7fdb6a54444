"""Fixes for version mismatches between TRL and transformers, applied inside the job.

``moe_expert_count``: TRL 1.16 turns on an MoE model's load-balancing loss (the config's own
``router_aux_loss_coef``) and, in its fused LM-head forward, reads the expert count as
``text_config.num_experts``. transformers' Granite MoE configs (``granitemoe``,
``granitemoeshared``, ``granitemoehybrid``: Granite 3 MoE and Granite 4.0-H) call it
``num_local_experts`` without the ``attribute_map`` alias Mixtral's config has, so the first
training step fails with ``AttributeError: ... no attribute 'num_experts'``. The fix gives the
config class that alias (the one Mixtral declares), so both names read the same number and
nothing extra is saved in ``config.json``; the loss is the model's own, unchanged.
"""

from __future__ import annotations

from typing import Any


def moe_expert_count(model: Any) -> str | None:
    """Alias ``num_experts`` to ``num_local_experts`` on the model's text config class where
    it lacks it; returns a note naming the class, or None when nothing was needed."""
    config = getattr(model, "config", None)
    if config is None:
        return None
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    cls = type(text)
    if "num_experts" in vars(text) or "num_experts" in cls.attribute_map \
            or not hasattr(text, "num_local_experts"):
        return None
    cls.attribute_map = {**cls.attribute_map, "num_experts": "num_local_experts"}
    return f"{cls.__name__}: num_experts reads num_local_experts (TRL's MoE loss reads it)"
