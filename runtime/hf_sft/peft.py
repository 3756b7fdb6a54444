"""The PEFT methods TRL's ``ModelConfig`` cannot express: IA3, prompt tuning, and LoRA with a
trained bias or a non-default initialisation (``get_peft_config`` covers plain LoRA / DoRA)."""

from __future__ import annotations

from typing import Any


def peft_config(entry: dict[str, Any] | None, model_args: Any) -> Any:
    if entry is None:
        return None
    kind = entry["kind"]
    if kind == "lora_extra":
        from trl.trainer.utils import get_peft_config

        config: Any = get_peft_config(model_args)
        config.bias = entry["bias"]
        init = entry["init_weights"]
        config.init_lora_weights = True if init == "default" else init
        return config
    if kind == "ia3":
        from peft import IA3Config

        return IA3Config(target_modules=entry["target_modules"],
                         feedforward_modules=entry["feedforward_modules"],
                         task_type="CAUSAL_LM")
    from peft import PromptTuningConfig, PromptTuningInit

    text = entry.get("init_text")
    return PromptTuningConfig(
        num_virtual_tokens=entry["num_virtual_tokens"], task_type="CAUSAL_LM",
        prompt_tuning_init=PromptTuningInit.TEXT if text else PromptTuningInit.RANDOM,
        prompt_tuning_init_text=text,
        tokenizer_name_or_path=model_args.model_name_or_path if text else None)
