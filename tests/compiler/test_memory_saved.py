"""``layer_saved_bytes`` against what autograd really saves in one decoder layer of the
installed transformers / PEFT / torchtune (CPU, small widths).

Bytes per token: the saved tensors' storages (``saved_tensors_hooks``, parameters left out)
over one layer, at two sequence lengths, differenced, so that per-layer constants (rotary
tables, autocast's weight copies) drop out.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")

DIMS = {"num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "embed_dim": 256,
        "intermediate_dim": 1024, "vocab_size": 512, "max_seq_len": 1024}
EVERY = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _saved_per_token(build: Any, layer_of: Any, autocast: bool) -> float:
    sizes = {}
    for seq in (64, 128):
        torch.manual_seed(0)
        model = build()
        model.train()
        skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
        seen: dict[int, int] = {}

        def pack(t: Any, skip: set[int] = skip, seen: dict[int, int] = seen) -> Any:
            ptr = t.untyped_storage().data_ptr()
            if ptr not in skip:
                seen.setdefault(ptr, t.untyped_storage().nbytes())
            return t

        hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
        layer = layer_of(model)
        layer.register_forward_pre_hook(lambda *_, h=hooks: h.__enter__())
        layer.register_forward_hook(lambda *_, h=hooks: h.__exit__(None, None, None))
        ids = torch.randint(0, DIMS["vocab_size"], (2, seq))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            model(ids)
        sizes[seq] = sum(seen.values())
    return (sizes[128] - sizes[64]) / (2 * 64)


def _hf(lora: bool, mixed: bool) -> tuple[Any, Any]:
    from transformers import LlamaConfig, LlamaForCausalLM

    def build() -> Any:
        d = DIMS
        config = LlamaConfig(num_hidden_layers=d["num_layers"], hidden_size=d["embed_dim"],
                             num_attention_heads=d["num_heads"],
                             num_key_value_heads=d["num_kv_heads"],
                             intermediate_size=d["intermediate_dim"],
                             vocab_size=d["vocab_size"], tie_word_embeddings=True,
                             attn_implementation="sdpa")
        model = LlamaForCausalLM(config).to(torch.float32 if mixed else torch.bfloat16)
        if lora:
            from peft import LoraConfig, get_peft_model

            model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                                     target_modules=EVERY,
                                                     task_type="CAUSAL_LM"))
        return model

    def layer(model: Any) -> Any:
        base = model.get_base_model() if lora else model
        return base.model.layers[1]

    return build, layer


def _tune(lora: bool) -> tuple[Any, Any]:
    def build() -> Any:
        from torchtune.models.llama3_2 import llama3_2, lora_llama3_2
        from torchtune.modules.peft import get_adapter_params, set_trainable_params

        d = DIMS
        kw = {"vocab_size": d["vocab_size"], "num_layers": d["num_layers"],
              "num_heads": d["num_heads"], "num_kv_heads": d["num_kv_heads"],
              "embed_dim": d["embed_dim"], "max_seq_len": d["max_seq_len"],
              "intermediate_dim": d["intermediate_dim"], "tie_word_embeddings": True}
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            if lora:
                model = lora_llama3_2(lora_attn_modules=["q_proj", "k_proj", "v_proj",
                                                         "output_proj"],
                                      apply_lora_to_mlp=True, lora_rank=8, lora_alpha=16,
                                      lora_dropout=0.0, **kw)
                set_trainable_params(model, get_adapter_params(model))
            else:
                model = llama3_2(**kw)
        finally:
            torch.set_default_dtype(old)
        return model

    return build, lambda model: model.layers[1]


@pytest.mark.parametrize("launcher,method,precision", [
    ("accelerate", "full", "pure"), ("accelerate", "lora", "pure"),
    ("accelerate", "full", "mixed"), ("accelerate", "lora", "mixed"),
    ("accelerate", "full", "autocast"), ("accelerate", "lora", "autocast"),
    ("torchtune", "full", "pure"), ("torchtune", "lora", "pure"),
])
def test_layer_saved_bytes_match_autograd(launcher: str, method: str, precision: str) -> None:
    from ftspec.compiler.memory import trainable_bytes
    from ftspec.compiler.memory_peak import layer_saved_bytes
    from helpers.jobs import make_job

    mixed = precision == "mixed"
    lora = method == "lora"
    job = make_job(allow_errors=True,
                   model={"uri": "file:///tmp/none", "dtype": "bf16", "precision": precision,
                          "family": None, "architecture": {"base": "llama3_2", **DIMS}},
                   method={"kind": "lora", "lora": {"rank": 8, "target_modules": EVERY}}
                   if lora else {"kind": "full", "lora": None},
                   launcher=launcher, deploy={"target": "local"})
    adapter = trainable_bytes(job.spec, 4.0 if mixed else 2.0, job.strategy) if lora else 0.0
    priced = layer_saved_bytes(job.spec, job.model, job.lora_modules, adapter)
    build, layer = _tune(lora) if launcher == "torchtune" else _hf(lora, mixed)
    measured = _saved_per_token(build, layer, precision != "pure")
    assert priced == pytest.approx(measured, rel=0.02), (launcher, method, precision)
