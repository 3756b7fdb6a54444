"""rule.precision-autocast-fp16 against the real libraries: fp16 autocast over fp16 weights
trains where PEFT's adapters are the only trained tensors (PEFT upcasts them to fp32), and
fails at the GradScaler where an fp16 tensor trains (a full fine-tune, LoRA's ``bias``,
``modules_to_save``). Each case builds a tiny Llama in fp16 (biased projections, so
``bias`` has something to train), applies the PEFT config the spec method means, runs one
forward under torch's CPU fp16 autocast and one GradScaler step, and checks that the step
fails exactly when the rule refuses the spec."""

from __future__ import annotations

from typing import Any

import pytest
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules.hardware import fp16_trained, precision_coherent

pytestmark = pytest.mark.slow

SPEC: dict[str, Any] = {
    "apiVersion": "ftspec.dev/v1alpha1", "kind": "FineTune", "metadata": {"name": "demo"},
    "model": {"uri": "hf://meta-llama/Llama-3.2-1B-Instruct", "family": "llama3_2-1b",
              "dtype": "fp16", "precision": "autocast"},
    "data": {"train": {"uri": "hf://tatsu-lab/alpaca"}},
    "training": {"global_batch_size": 16, "micro_batch_size": 2, "learning_rate": 2e-4},
    "launcher": "accelerate",
    "resources": {"gpus_per_node": 4, "accelerator": "nvidia-t4"},
}
MODULES = ["q_proj", "v_proj"]

CASES: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "full": ({"kind": "full"}, None),
    "lora": ({"kind": "lora", "lora": {"target_modules": MODULES}},
             {"type": "lora", "target_modules": MODULES}),
    "dora": ({"kind": "dora", "lora": {"target_modules": MODULES}},
             {"type": "lora", "target_modules": MODULES, "use_dora": True}),
    "lora-bias-all": ({"kind": "lora", "lora": {"target_modules": MODULES, "bias": "all"}},
                      {"type": "lora", "target_modules": MODULES, "bias": "all"}),
    "lora-bias-lora-only": (
        {"kind": "lora", "lora": {"target_modules": MODULES, "bias": "lora_only"}},
        {"type": "lora", "target_modules": MODULES, "bias": "lora_only"}),
    "lora-modules-to-save": (
        {"kind": "lora", "lora": {"target_modules": MODULES, "modules_to_save": ["lm_head"]}},
        {"type": "lora", "target_modules": MODULES, "modules_to_save": ["lm_head"]}),
    "ia3": ({"kind": "ia3"}, {"type": "ia3"}),
    "prompt_tuning": ({"kind": "prompt_tuning", "prompt_tuning": {"num_virtual_tokens": 4}},
                      {"type": "prompt_tuning"}),
}


def _tiny_fp16_model(peft_config: dict[str, Any] | None) -> Any:
    import peft
    import torch
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, attention_bias=True,
        tie_word_embeddings=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to(torch.float16)
    if peft_config is None:
        return model
    kind = peft_config.pop("type")
    if kind == "lora":
        return peft.get_peft_model(model, peft.LoraConfig(**peft_config))
    if kind == "ia3":
        return peft.get_peft_model(model, peft.IA3Config(
            target_modules=["k_proj", "v_proj", "down_proj"], feedforward_modules=["down_proj"]))
    return peft.get_peft_model(model, peft.PromptTuningConfig(
        task_type="CAUSAL_LM", num_virtual_tokens=4))


def _scaler_step(model: Any) -> str | None:
    """One fp16-autocast forward and a GradScaler step, as transformers' Trainer runs them
    under ``fp16: true``; the scaler's error, or None."""
    import torch

    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    ids = torch.randint(0, 64, (2, 8))
    with torch.autocast("cpu", dtype=torch.float16):
        loss = model(input_ids=ids, labels=ids).loss
    scaler.scale(loss).backward()
    try:
        scaler.unscale_(optimizer)  # the Trainer's gradient clipping unscales first
        scaler.step(optimizer)
    except ValueError as exc:
        return str(exc)
    scaler.update()
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_the_rule_refuses_exactly_the_runs_the_loss_scaler_refuses(case: str) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    if not torch.amp.autocast_mode.is_autocast_available("cpu"):
        pytest.skip("this torch has no CPU autocast")
    method, peft_config = CASES[case]
    spec = FineTuneSpec.model_validate({**SPEC, "method": method})
    refused = [d.code for d in precision_coherent(spec)]
    model = _tiny_fp16_model(dict(peft_config) if peft_config else None)
    trained_dtypes = {p.dtype for p in model.parameters() if p.requires_grad}
    error = _scaler_step(model)
    assert (error is not None) == (fp16_trained(spec) is not None), (case, error)
    assert (error is not None) == (torch.float16 in trained_dtypes), (case, trained_dtypes)
    assert refused == (["rule.precision-autocast-fp16"] if error else []), case
    if error is not None:
        assert error == "Attempting to unscale FP16 gradients."


def test_adapters_cast_to_bf16_over_a_quantized_base_pass_the_scaler() -> None:
    """qlora on TRL: SFTTrainer casts the adapters over a 4-bit / 8-bit base to bf16 (the
    QLoRA paper's choice). bitsandbytes cannot quantize on this CPU, so the cast is applied
    to the LoRA model as SFTTrainer applies it: bf16 gradients pass the scaler too (it
    refuses fp16 ones only)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    model = _tiny_fp16_model({"type": "lora", "target_modules": MODULES})
    for param in model.parameters():
        if param.requires_grad:
            param.data = param.data.to(torch.bfloat16)
    spec = FineTuneSpec.model_validate({**SPEC, "method": {
        "kind": "qlora", "quantization": {"compute_dtype": "fp16"}}})
    assert list(precision_coherent(spec)) == []
    assert _scaler_step(model) is None
