"""LoRA target modules as TRL hands them to PEFT from the compiled ``sft.yaml``.

TRL's ``ModelConfig`` turns a one-item ``lora_target_modules`` list into its item, a string,
which PEFT full-matches as a regular expression against each module's whole path: a lone
``q_proj`` would adapt nothing and the run would stop. Each case is read by TRL's own parser
and applied by PEFT to a tiny random Llama.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.trl_parse import compiled_files, target_modules, trl_reads

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hf-peft-smollm-135m-samsum.yaml"
FOUR = "target_modules: [q_proj, k_proj, v_proj, o_proj]"


def _adapted(modules: str) -> tuple[set[str], object]:
    """The module names PEFT adapts on a tiny Llama when the spec says ``modules``, and the
    ``lora_target_modules`` TRL read."""
    import torch
    from peft import get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import get_peft_config

    text = EXAMPLE.read_text()
    assert FOUR in text
    files = compiled_files(text.replace(FOUR, f"target_modules: {modules}"), "lora")
    model_args = trl_reads(files["sft.yaml"])[2]
    torch.manual_seed(0)
    tiny = LlamaForCausalLM(LlamaConfig(hidden_size=32, intermediate_size=64, vocab_size=128,
                                        num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2))
    peft_model = get_peft_model(tiny, get_peft_config(model_args))
    adapted = {name for name, mod in peft_model.named_modules() if hasattr(mod, "lora_A")}
    return adapted, model_args.lora_target_modules


@pytest.mark.parametrize(("modules", "names"), [
    ("[q_proj]", {"q_proj"}),
    ("[down_proj]", {"down_proj"}),
    ("[q_proj, v_proj]", {"q_proj", "v_proj"}),
])
def test_each_named_module_is_adapted_in_every_layer(modules: str, names: set[str]) -> None:
    adapted, read = _adapted(modules)
    assert {n.rsplit(".", 1)[-1] for n in adapted} == names
    assert len(adapted) == 2 * len(names)  # both layers
    assert target_modules(read) == names  # what the field contract compares


def test_a_lone_name_is_written_as_the_pattern_it_means() -> None:
    """Without the pattern TRL's string would be the bare name, which PEFT refuses."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    _, read = _adapted("[q_proj]")
    assert isinstance(read, str) and read != "q_proj"
    torch.manual_seed(0)
    tiny = LlamaForCausalLM(LlamaConfig(hidden_size=32, intermediate_size=64, vocab_size=128,
                                        num_hidden_layers=1, num_attention_heads=4))
    with pytest.raises(ValueError, match="not found in the base model"):
        get_peft_model(tiny, LoraConfig(target_modules="q_proj"))
