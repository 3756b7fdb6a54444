"""What torchtune does when a config leaves a key out: one table, read from torchtune 0.6.1.

Two users: the torchtune target leaves a key implicit when the base config lacks it and the
spec asks for exactly this default (so a compiled config stays key-equal to the shipped one),
and ``ftspec import torchtune`` writes these defaults into the spec explicitly.

``RECIPE_DEFAULTS``: the ``cfg.get(key, default)`` reads of the SFT recipes
(``recipes/{lora,full}_finetune_{single_device,distributed}.py``). ``COMPONENT_DEFAULTS``:
keyword defaults of the components configs instantiate (torch / bitsandbytes optimizers,
torchtune's schedule and dataset builders, the LoRA model builders).
"""

from __future__ import annotations

from typing import Any

TORCHTUNE_VERSION = "0.6.1"

RECIPE_DEFAULTS: dict[str, Any] = {
    "clip_grad_norm": None,
    "compile": False,
    "enable_activation_checkpointing": False,
    "enable_activation_offloading": False,
    "fsdp_cpu_offload": False,
    "fsdp_reshard_after_forward": True,
    "log_every_n_steps": 1,
    "log_peak_memory_stats": False,
    "lr_scheduler": None,
    "optimizer_in_bwd": False,
    "save_adapter_weights_only": False,
}

_ADAM = {"weight_decay": 0.0, "betas": [0.9, 0.999], "eps": 1e-8}
_ADAMW = {"weight_decay": 0.01, "betas": [0.9, 0.999], "eps": 1e-8}
_SFT_DATA = {"split": "train", "train_on_input": False, "packed": False}

COMPONENT_DEFAULTS: dict[str, dict[str, Any]] = {
    # fused=None is torch's "not fused"; the spec's fused: false means the same.
    "torch.optim.AdamW": {**_ADAMW, "fused": False},
    "torch.optim.Adam": {**_ADAM, "fused": False},
    "torch.optim.SGD": {"weight_decay": 0.0, "momentum": 0.0},
    "torch.optim.RMSprop": {"weight_decay": 0.0, "momentum": 0.0, "eps": 1e-8},
    "bitsandbytes.optim.AdamW8bit": dict(_ADAMW),
    "bitsandbytes.optim.PagedAdamW8bit": dict(_ADAMW),
    "bitsandbytes.optim.PagedAdamW": dict(_ADAMW),
    "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup": {"num_cycles": 0.5},
    "torchtune.datasets.instruct_dataset": dict(_SFT_DATA),
    "torchtune.datasets.chat_dataset": dict(_SFT_DATA),
    "torchtune.datasets.text_completion_dataset": {"split": "train", "column": "text",
                                                   "packed": False},
    "torchtune.datasets.alpaca_dataset": {**_SFT_DATA, "train_on_input": True,
                                          "source": "tatsu-lab/alpaca"},
    "torchtune.datasets.alpaca_cleaned_dataset": {**_SFT_DATA, "train_on_input": True,
                                                  "source": "yahma/alpaca-cleaned"},
}

LORA_BUILDER_DEFAULTS: dict[str, Any] = {
    "apply_lora_to_mlp": False,
    "apply_lora_to_output": False,
    "lora_dropout": 0.0,
    "use_dora": False,
    "quantize_base": False,
}
"""Keyword defaults shared by every ``lora_*`` / ``qlora_*`` model builder."""

_MISSING = object()


def component_default(component: str | None, key: str) -> Any:
    """The default of ``key`` for ``component`` (a ``_component_`` path), or ``_MISSING``."""
    if component is None:
        return _MISSING
    if component.rsplit(".", 1)[-1].startswith(("lora_", "qlora_")):
        return LORA_BUILDER_DEFAULTS.get(key, _MISSING)
    return COMPONENT_DEFAULTS.get(component, {}).get(key, _MISSING)


def is_implicit(component: str | None, key: str, value: Any) -> bool:
    """Would leaving ``key`` out give ``value``? (``component`` None: a recipe-level key.)"""
    if component is None:
        default = RECIPE_DEFAULTS.get(key, _MISSING)
    else:
        default = component_default(component, key)
    if default is _MISSING:
        return False
    if isinstance(default, list) and isinstance(value, (list, tuple)):
        return list(value) == default
    if default is None:
        return value is None
    return type(default) is type(value) and bool(default == value)
