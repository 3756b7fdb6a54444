"""Each semantic rule: one spec it accepts, one it rejects (with the code and key path)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules import (
    RULES,
    addresses,
    batch,
    combos,
    data,
    hardware,
    inert,
    method,
    naming,
    sweep,
    training,
)
from ftspec.spec.rules.secrets import literal_secrets

_MOE_ARCH: dict[str, Any] = {
    "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "embed_dim": 64,
    "intermediate_dim": 32, "vocab_size": 320, "max_seq_len": 256, "num_experts": 4}
"""A custom MoE model (no catalog family)."""

BASE: dict[str, Any] = {
    "apiVersion": "ftspec.dev/v1alpha1",
    "kind": "FineTune",
    "metadata": {"name": "demo"},
    "model": {"uri": "hf://meta-llama/Llama-3.2-1B-Instruct", "family": "llama3_2-1b"},
    "data": {"train": {"uri": "hf://tatsu-lab/alpaca"}},
    "training": {"global_batch_size": 16, "micro_batch_size": 2, "learning_rate": 2e-4},
    "resources": {"gpus_per_node": 4, "accelerator": "nvidia-a100-80gb"},
}


def spec(**changes: Any) -> FineTuneSpec:
    """BASE with dotted-path changes: spec(**{"resources.nodes": 2}); None deletes."""
    doc = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        node = doc
        *parents, last = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return FineTuneSpec.model_validate(doc)


Rule = Callable[[FineTuneSpec], Iterable[Diagnostic]]
MIX = {"datasets": [{"uri": "hf://a/b", "proportion": 0.7}, {"uri": "hf://c/d", "proportion": 0.3}]}
BAD_MIX = {"datasets": [{"uri": "hf://a/b", "proportion": 0.7}, {"uri": "hf://c/d", "proportion": 0.2}]}
CASES: list[tuple[str, Rule, dict[str, Any], dict[str, Any], str, str]] = [
    # id, rule, accepted changes, rejected changes, code, key path
    ("name-format", naming.name_is_valid_for_target, {"metadata.name": "a-b1"},
     {"metadata.name": "1abc"}, "rule.name-format", "metadata.name"),
    ("ray-address", addresses.ray_address_is_usable,
     {"deploy": {"target": "ray", "ray": {"address": "http://127.0.0.1:8265"}}},
     {"deploy": {"target": "ray", "ray": {"address": "http://[::1"}}},
     "rule.ray-address", "deploy.ray.address"),
    ("name-length-63", naming.name_is_valid_for_target, {"metadata.name": "a" * 63},
     {"metadata.name": "a" * 64}, "rule.name-length", "metadata.name"),
    ("batch-divisible", batch.batch_arithmetic, {"training.global_batch_size": 8},
     {"training.global_batch_size": 10}, "rule.batch-divisible", "training.global_batch_size"),
    ("batch-accumulation", batch.batch_arithmetic,
     {"training.gradient_accumulation_steps": 2},
     {"training.gradient_accumulation_steps": 3}, "rule.batch-arithmetic",
     "training.global_batch_size"),
    ("batch-multiple", batch.batch_arithmetic, {"training.global_batch_size": 24},
     {"training.global_batch_size": 12}, "rule.batch-arithmetic", "training.global_batch_size"),
    ("gpus-divisible", hardware.gpus_divisible_by_nodes,
     {"resources": {"nodes": 2, "gpus": 4, "accelerator": "nvidia-a100-80gb"}},
     {"resources": {"nodes": 2, "gpus": 3, "accelerator": "nvidia-a100-80gb"}},
     "rule.gpus-divisible", "resources.gpus"),
    ("gpus-both", hardware.gpus_divisible_by_nodes, {},
     {"resources.gpus": 4}, "rule.gpus-both", "resources.gpus"),
    ("accelerator-required", hardware.accelerator_required,
     {"resources": {"gpus_per_node": 0}}, {"resources": {"gpus_per_node": 2}},
     "rule.accelerator-required", "resources"),
    ("bf16-t4", hardware.bf16_supported, {"model.dtype": "fp16", "resources.accelerator": "nvidia-t4"},
     {"resources.accelerator": "nvidia-t4"}, "rule.bf16-unsupported", "model.dtype"),
    ("bf16-v100", hardware.bf16_supported, {"resources.accelerator": "nvidia-a10g"},
     {"resources.accelerator": "nvidia-v100-16gb"}, "rule.bf16-unsupported", "model.dtype"),
    ("flash-attn-v100", hardware.flash_attention_supported,
     {"model.attn_implementation": "flash_attention_2", "model.dtype": "fp16",
      "resources.accelerator": "nvidia-a10g"},
     {"model.attn_implementation": "flash_attention_2", "model.dtype": "fp16",
      "resources.accelerator": "nvidia-v100-32gb"}, "rule.flash-attn-gpu",
     "model.attn_implementation"),
    ("flash-attn-fp32", hardware.flash_attention_supported,
     {"model.attn_implementation": "flash_attention_2"},
     {"model.attn_implementation": "flash_attention_2", "model.dtype": "fp32"},
     "rule.flash-attn-dtype", "model.attn_implementation"),
    ("precision-pure-fp16", hardware.precision_coherent,
     {"model.dtype": "fp16", "model.precision": "mixed"},
     {"model.dtype": "fp16", "model.precision": "pure"}, "rule.precision-pure-fp16",
     "model.precision"),
    ("precision-mixed-fp32", hardware.precision_coherent,
     {"model.dtype": "fp32", "model.precision": "pure"},
     {"model.dtype": "fp32", "model.precision": "mixed"}, "rule.precision-mixed-fp32",
     "model.precision"),
    ("precision-autocast-fp16", hardware.precision_coherent,
     {"model.dtype": "fp16", "model.precision": "autocast", "method.kind": "lora"},
     {"model.dtype": "fp16", "model.precision": "autocast", "method.kind": "full"},
     "rule.precision-autocast-fp16", "model.precision"),
    ("precision-autocast-fp16-bias", hardware.precision_coherent,
     {"model.dtype": "fp16", "model.precision": "autocast", "method.kind": "dora"},
     {"model.dtype": "fp16", "model.precision": "autocast",
      "method": {"kind": "lora", "lora": {"bias": "lora_only"}}},
     "rule.precision-autocast-fp16", "model.precision"),
    ("precision-autocast-fp16-modules-to-save", hardware.precision_coherent,
     {"model.dtype": "fp16", "model.precision": "autocast", "method.kind": "ia3"},
     {"model.dtype": "fp16", "model.precision": "autocast",
      "method": {"kind": "lora", "lora": {"modules_to_save": ["lm_head"]}}},
     "rule.precision-autocast-fp16", "model.precision"),
    ("precision-autocast-fp32", hardware.precision_coherent,
     {"model.dtype": "bf16", "model.precision": "autocast"},
     {"model.dtype": "fp32", "model.precision": "autocast"}, "rule.precision-autocast-fp32",
     "model.precision"),
    ("ep-experts", hardware.expert_parallel,
     {"model.family": "mixtral-8x7b", "distributed": {"expert_parallel": 4}},
     {"model.family": "mixtral-8x7b", "resources.gpus_per_node": 6,
      "training.global_batch_size": 12, "distributed": {"expert_parallel": 3}},
     "rule.ep-experts", "distributed.expert_parallel"),
    ("ep-dense", hardware.expert_parallel, {"distributed": {"expert_parallel": 1}},
     {"distributed": {"expert_parallel": 2}}, "rule.ep-dense", "distributed.expert_parallel"),
    ("ep-divisible", hardware.expert_parallel,
     {"model.family": "mixtral-8x7b", "distributed": {"expert_parallel": 4}},
     {"model.family": "mixtral-8x7b", "distributed": {"expert_parallel": 3}},
     "rule.ep-divisible", "distributed.expert_parallel"),
    ("ep-cpu-processes", hardware.expert_parallel,
     {"model.family": "mixtral-8x7b", "resources.gpus_per_node": 0,
      "resources.processes_per_node": 2, "distributed": {"expert_parallel": 2}},
     {"model.family": "mixtral-8x7b", "resources.gpus_per_node": 0,
      "resources.processes_per_node": 1, "distributed": {"expert_parallel": 2}},
     "rule.ep-divisible", "distributed.expert_parallel"),
    ("ep-custom-dense", hardware.expert_parallel,
     {"model.family": None, "model.architecture": _MOE_ARCH, "distributed": {"expert_parallel": 2}},
     {"model.family": None, "model.architecture": {**_MOE_ARCH, "num_experts": 0},
      "distributed": {"expert_parallel": 2}}, "rule.ep-dense", "distributed.expert_parallel"),
    ("ep-custom-experts", hardware.expert_parallel,
     {"model.family": None, "model.architecture": _MOE_ARCH, "distributed": {"expert_parallel": 4}},
     {"model.family": None, "model.architecture": {**_MOE_ARCH, "num_experts": 6},
      "distributed": {"expert_parallel": 4}}, "rule.ep-experts", "distributed.expert_parallel"),
    ("lora-without-lora", method.settings_match_method, {"method": {"kind": "lora", "lora": {"rank": 4}}},
     {"method": {"kind": "full", "lora": {"rank": 4}}}, "rule.lora-without-lora", "method.lora"),
    ("qlora-quantization", method.settings_match_method,
     {"method": {"kind": "qlora", "quantization": {"bits": 4}}}, {"method": {"kind": "qlora"}},
     "rule.quantization-required", "method.kind"),
    ("qlora-4bit", method.settings_match_method,
     {"method": {"kind": "qlora", "quantization": {"bits": 4, "quant_type": "fp4"}}},
     {"method": {"kind": "qlora", "quantization": {"bits": 8}}}, "rule.qlora-4bit",
     "method.quantization"),
    ("qlora-8bit-int8", method.settings_match_method,
     {"method": {"kind": "qlora", "quantization": {"bits": 8, "quant_type": "int8"}}},
     {"method": {"kind": "qlora", "quantization": {"bits": 4, "quant_type": "int8"}}},
     "rule.qlora-4bit", "method.quantization"),
    ("loraplus-embedding-alone", method.settings_match_method,
     {"method": {"kind": "lora", "lora": {"loraplus_lr_ratio": 16,
                                          "loraplus_lr_embedding": 1e-6}}},
     {"method": {"kind": "lora", "lora": {"loraplus_lr_embedding": 1e-6}}},
     "rule.loraplus-embedding-alone", "method.lora.loraplus_lr_embedding"),
    ("unfrozen-pattern", method.settings_match_method,
     {"method": {"kind": "full", "lora": None, "unfrozen_parameters": [r"^model\.layers\.1\."]}},
     {"method": {"kind": "full", "lora": None, "unfrozen_parameters": ["ok", "^model.(layers"]}},
     "rule.unfrozen-pattern", "method.unfrozen_parameters[1]"),
    ("fsdp-layer-path", combos.fsdp_layer_class,
     {"distributed": {"strategy": "fsdp", "fsdp": {"transformer_layer_cls": "LlamaDecoderLayer"}}},
     {"distributed": {"strategy": "fsdp", "fsdp": {
         "transformer_layer_cls": "transformers.models.llama.modeling_llama.LlamaDecoderLayer"}}},
     "rule.fsdp-layer-path", "distributed.fsdp.transformer_layer_cls"),
    ("fsdp-layer-class", combos.fsdp_layer_class,
     {"distributed": {"strategy": "fsdp", "fsdp": {"transformer_layer_cls": "LlamaDecoderLayer"}}},
     {"distributed": {"strategy": "fsdp", "fsdp": {"transformer_layer_cls": "Qwen2DecoderLayer"}}},
     "rule.fsdp-layer-class", "distributed.fsdp.transformer_layer_cls"),
    # axolotl's Mixtral example wraps the MoE blocks: a module of the model, so accelerate
    # finds it (the classes are read from the installed transformers' modeling_mixtral.py)
    ("fsdp-layer-moe-block", combos.fsdp_layer_class,
     {"model.family": "mixtral-8x7b", "distributed": {
         "strategy": "fsdp", "fsdp": {"transformer_layer_cls": "MixtralSparseMoeBlock"}}},
     {"model.family": "mixtral-8x7b", "distributed": {
         "strategy": "fsdp", "fsdp": {"transformer_layer_cls": "MixtralSparseMoeBlock,"
                                      "MixtralNoSuchBlock"}}},
     "rule.fsdp-layer-class", "distributed.fsdp.transformer_layer_cls"),
    ("all-linear-alone", method.settings_match_method,
     {"method": {"kind": "lora", "lora": {"target_modules": ["all-linear"]}}},
     {"method": {"kind": "lora", "lora": {"target_modules": ["all-linear", "q_proj"]}}},
     "rule.all-linear-alone", "method.lora.target_modules"),
    ("all-linear-output", method.settings_match_method,
     {"method": {"kind": "lora", "lora": {"target_modules": ["q_proj"], "output": True}}},
     {"method": {"kind": "lora", "lora": {"target_modules": ["all-linear"], "output": True}}},
     "rule.all-linear-output", "method.lora.output"),
    ("quantization-unused", method.settings_match_method, {"method": {"kind": "lora"}},
     {"method": {"kind": "lora", "quantization": {"bits": 4}}}, "rule.quantization-unused",
     "method.quantization"),
    ("ia3-unused", method.settings_match_method, {"method": {"kind": "ia3", "ia3": {}}},
     {"method": {"kind": "lora", "ia3": {}}}, "rule.ia3-unused", "method.ia3"),
    ("proportion-concatenate", data.mixture_proportions,
     {"data": {"mixture": {"strategy": "concatenate", "datasets": [
         {"uri": "hf://org/a"}, {"uri": "hf://org/b"}]}}},
     {"data": {"mixture": {"strategy": "concatenate", "datasets": [
         {"uri": "hf://org/a"}, {"uri": "hf://org/b", "proportion": 0.5}]}}},
     "rule.proportion-concatenate", "data.mixture.datasets[1].proportion"),
    ("loader-unknown", data.loader_known,
     {"data.train": {"uri": "s3://bucket/train.dat", "loader": "csv"}},
     {"data.train": {"uri": "s3://bucket/train.dat"}}, "rule.loader-unknown", "data.train.uri"),
    # a hub repository's id may hold a dot (HuggingFaceH4/airoboros-3.2); a file inside is a file
    ("loader-unknown-hub", data.loader_known,
     {"data.train": {"uri": "hf://HuggingFaceH4/airoboros-3.2"}},
     {"data.train": {"uri": "hf://org/repo/train.dat"}}, "rule.loader-unknown", "data.train.uri"),
    ("data-missing", data.train_or_mixture, {}, {"data": {"max_seq_len": 512}},
     "rule.data-missing", "data"),
    ("data-both", data.train_or_mixture, {"data": {"mixture": MIX}},
     {"data": {"train": {"uri": "hf://x/y"}, "mixture": MIX}}, "rule.data-both", "data.mixture"),
    ("proportion-sum", data.mixture_proportions, {"data": {"mixture": MIX}},
     {"data": {"mixture": BAD_MIX}}, "rule.proportion-sum", "data.mixture.datasets"),
    ("prompt-exclusive", data.templates_exclusive,
     {"data.train": {"uri": "hf://x/y", "format": "completion", "prompt_template": "{a}"}},
     {"data.train": {"uri": "hf://x/y", "prompt_template": "{a}", "prompt_func": "m:f"}},
     "rule.prompt-exclusive", "data.train.prompt_func"),
    ("completion-prompt", data.templates_exclusive,
     {"data.train": {"uri": "hf://x/y", "format": "completion", "prompt_func": "m:f"}},
     {"data.train": {"uri": "hf://x/y", "format": "completion"}},
     "rule.completion-prompt", "data.train.format"),
    ("packed-length", data.packing_needs_length,
     {"data": {"train": {"uri": "hf://x/y"}, "max_seq_len": None}},
     {"data": {"train": {"uri": "hf://x/y"}, "max_seq_len": None, "packed": True}},
     "rule.packed-length", "data.max_seq_len"),
    ("eval-data", data.evaluation_data,
     {"training.evaluation": {"strategy": "epoch"}, "data.validation_split_ratio": 0.1},
     {"training.evaluation": {"strategy": "epoch"}}, "rule.eval-data",
     "training.evaluation.strategy"),
    ("early-stopping-eval", data.evaluation_data, {},
     {"training.early_stopping": {"patience": 2}}, "rule.early-stopping-eval",
     "training.early_stopping"),
    ("duration", training.duration, {"training.epochs": None},
     {"training": {"epochs": None, "global_batch_size": 16, "learning_rate": 1e-4}},
     "rule.duration", "training"),
    ("warmup-both", training.warmup, {"training.scheduler": {"warmup_ratio": 0.1}},
     {"training.scheduler": {"warmup_ratio": 0.1, "warmup_steps": 10}}, "rule.warmup-both",
     "training.scheduler.warmup_ratio"),
    ("steps-missing", training.step_strategies,
     {"training.checkpointing": {"strategy": "steps", "steps": 100}},
     {"training.checkpointing": {"strategy": "steps"}}, "rule.steps-missing",
     "training.checkpointing.strategy"),
    ("stop-method-and-numbers", training.stop_rule,
     {"training.stop": {"method": "WARMUP_60S_STABLE_120S_OR_10_STEPS", "after_seconds": 600}},
     {"training.stop": {"method": "WARMUP_60S_STABLE_120S_OR_10_STEPS", "stable_steps": 3}},
     "rule.stop-method-and-numbers", "training.stop.stable_steps"),
    ("model-family", combos.family_or_architecture, {},
     {"model.family": None}, "rule.model-family", "model"),
    ("strategy-settings", combos.strategy_settings,
     {"distributed": {"strategy": "fsdp", "fsdp": {}}},
     {"distributed": {"strategy": "ddp", "fsdp": {}}}, "rule.strategy-settings",
     "distributed.fsdp"),
    ("strategy-none", combos.strategy_settings, {"distributed": {"strategy": "ddp"}},
     {"distributed": {"strategy": "none"}}, "rule.strategy-none", "distributed.strategy"),
    ("local-nodes", combos.target_supports_spec,
     {"deploy": {"target": "kubeflow"}, "method": {"kind": "full"},
      "resources.nodes": 2},
     {"resources.nodes": 2}, "rule.local-nodes", "resources.nodes"),
    ("remote-file-uri", combos.target_supports_spec,
     {"data.train": {"uri": "file://train.jsonl"}},
     {"data.train": {"uri": "file://train.jsonl"}, "deploy": {"target": "ray"}},
     "rule.remote-file-uri", "data.train.uri"),
    ("sweep-path", sweep.grid_is_valid,
     {"sweep": {"grid": {"training.learning_rate": [1e-4, 2e-4], "method.lora.rank": [8]}}},
     {"sweep": {"grid": {"training.learnin_rate": [1e-4]}}}, "rule.sweep-path",
     "sweep.grid.training.learnin_rate"),
    ("sweep-fixed-path", sweep.grid_is_valid,
     {"sweep": {"grid": {"overrides.torchtune.compile": [True, False]}}},
     {"sweep": {"grid": {"metadata.name": ["a", "b"]}}}, "rule.sweep-fixed-path",
     "sweep.grid.metadata.name"),
    ("sweep-duplicate", sweep.grid_is_valid,
     {"sweep": {"grid": {"data.max_seq_len": [512, 1024]}}},
     {"sweep": {"grid": {"data.max_seq_len": [512, 512]}}}, "rule.sweep-duplicate",
     "sweep.grid.data.max_seq_len[1]"),
    ("sweep-size", sweep.grid_is_valid,
     {"sweep": {"grid": {"training.seed": list(range(8)), "training.max_grad_norm": [float(i + 1) for i in range(8)]}}},
     {"sweep": {"grid": {"training.seed": list(range(9)),
                         "training.max_grad_norm": [float(i + 1) for i in range(8)]}}},
     "rule.sweep-size", "sweep.grid"),
]


def _codes(rule: Rule, s: FineTuneSpec) -> list[tuple[str, str]]:
    from ftspec.spec.diagnostics import format_path

    return [(d.code, format_path(d.path)) for d in rule(s) if d.is_error]


@pytest.mark.parametrize(("rule", "good", "bad", "code", "path"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(rule: Rule, good: dict[str, Any], bad: dict[str, Any], code: str,
              path: str) -> None:
    assert code not in [c for c, _ in _codes(rule, spec(**good))]
    assert (code, path) in _codes(rule, spec(**bad))


WARNING_CASES: list[tuple[str, Rule, dict[str, Any], dict[str, Any], str, str]] = [
    ("hybrid-shard-one-node", combos.strategy_settings,
     {"resources.nodes": 2, "distributed": {"strategy": "fsdp",
                                            "fsdp": {"sharding": "hybrid_shard"}}},
     {"distributed": {"strategy": "fsdp", "fsdp": {"sharding": "hybrid_shard"}}},
     "rule.hybrid-single-node", "distributed.fsdp.sharding"),
    ("inert-momentum", inert.inert_settings,
     {"training.optimizer": {"name": "sgd", "momentum": 0.9}},
     {"training.optimizer": {"name": "adamw", "momentum": 0.9}}, "rule.inert",
     "training.optimizer.momentum"),
    ("inert-conversation-column", inert.inert_settings,
     {"data.train": {"uri": "hf://x/y", "format": "chat", "conversation_column": "c"}},
     {"data.train": {"uri": "hf://x/y", "conversation_column": "c"}}, "rule.inert",
     "data.train.conversation_column"),
    ("inert-packed-attention", inert.inert_settings,
     {"data": {"packed": True, "packed_attention": "across"}},
     {"data": {"packed_attention": "across"}}, "rule.inert", "data.packed_attention"),
    ("inert-checkpoint-steps", inert.inert_settings,
     {"training.checkpointing": {"strategy": "steps", "steps": 5}},
     {"training.checkpointing": {"steps": 5}}, "rule.inert", "training.checkpointing.steps"),
    # transformers 5 fuses Mixtral's experts into 3-D parameters LoRA does not reach
    ("lora-moe-experts", method.lora_targets_reachable,
     {"model.family": "mixtral-8x7b",
      "method": {"kind": "lora", "lora": {"target_modules": ["q_proj", "v_proj"]}}},
     {"model.family": "mixtral-8x7b",
      "method": {"kind": "lora", "lora": {"target_modules": ["q_proj", "up_proj"]}}},
     "rule.lora-moe-experts", "method.lora.target_modules"),
    # Llama 4's shared expert is a gated MLP of linear layers beside the fused experts
    ("lora-moe-shared-expert", method.lora_targets_reachable,
     {"model.family": "llama4-scout-17b-16e",
      "method": {"kind": "lora", "lora": {"target_modules": ["q_proj", "v_proj"]}}},
     {"model.family": "llama4-scout-17b-16e",
      "method": {"kind": "lora", "lora": {"target_modules": ["q_proj", "up_proj"]}}},
     "rule.lora-moe-experts", "method.lora.target_modules"),
    ("lora-moe-experts-mlp", method.lora_targets_reachable,
     {"method": {"kind": "lora", "lora": {"target_modules": ["q_proj"], "mlp": True}}},
     {"model.family": "gpt-oss-20b",
      "method": {"kind": "lora", "lora": {"target_modules": ["q_proj"], "mlp": True}}},
     "rule.lora-moe-experts", "method.lora.mlp"),
    # a dense Granite 4.0's MLP is shared_mlp.input_linear / output_linear
    ("lora-fused-mlp", method.lora_targets_reachable,
     {"model.family": "granite-4.0-micro",
      "method": {"kind": "lora", "lora": {"target_modules": ["all-linear"]}}},
     {"model.family": "granite-4.0-micro",
      "method": {"kind": "lora", "lora": {"target_modules": ["q_proj", "down_proj"]}}},
     "rule.lora-fused-mlp", "method.lora.target_modules"),
    ("lora-fused-mlp-mlp", method.lora_targets_reachable,
     {"model.family": "granite-3.3-8b",
      "method": {"kind": "lora", "lora": {"target_modules": ["q_proj"], "mlp": True}}},
     {"model.family": "granite-4.0-h-1b",
      "method": {"kind": "lora", "lora": {"target_modules": ["q_proj"], "mlp": True}}},
     "rule.lora-fused-mlp", "method.lora.mlp"),
]


@pytest.mark.parametrize(("rule", "good", "bad", "code", "path"),
                         [c[1:] for c in WARNING_CASES], ids=[c[0] for c in WARNING_CASES])
def test_warning_rule(rule: Rule, good: dict[str, Any], bad: dict[str, Any], code: str,
                      path: str) -> None:
    from ftspec.spec.diagnostics import format_path

    def warnings(s: FineTuneSpec) -> list[tuple[str | None, str]]:
        return [(d.code, format_path(d.path)) for d in rule(s) if not d.is_error]

    assert (code, path) not in warnings(spec(**good))
    assert (code, path) in warnings(spec(**bad))


def test_every_rule_is_tested_and_registered() -> None:
    tested = {c[1] for c in CASES} | {c[1] for c in WARNING_CASES}
    assert set(RULES) <= tested, [r.__name__ for r in RULES if r not in tested]


def test_base_spec_passes_every_rule() -> None:
    from ftspec.spec.rules import run_rules

    assert [d for d in run_rules(spec()) if d.is_error] == []


def test_strategy_on_one_process_is_only_a_warning() -> None:
    s = spec(**{"resources.gpus_per_node": 1, "training.global_batch_size": 4,
                "distributed": {"strategy": "fsdp"}})
    found = list(combos.strategy_settings(s))
    assert [(d.severity, d.code) for d in found] == [(Severity.WARNING, "rule.strategy-single")]


@pytest.mark.parametrize("value", [
    "hf_AbCdEfGhIjKlMnOpQrStUvWx", "AKIAABCDEFGHIJKLMNOP", "sk-abcdefghijklmnopqrstuv",
    "ghp_" + "a" * 36, "glpat-abcdefghijklmnopqrst",
])
def test_literal_token_anywhere_is_an_error_that_hides_the_value(value: str) -> None:
    found = literal_secrets({"metadata": {"description": f"uses {value}"}})
    assert [(d.code, d.path) for d in found] == [("rule.secret-literal",
                                                  ("metadata", "description"))]
    assert value not in found[0].format()


def test_secret_references_are_accepted_and_literals_rejected() -> None:
    assert literal_secrets({"secrets": {"hf": {"secretRef": {"name": "s", "key": "k"}}}}) == []
    assert literal_secrets({"secrets": {"hf": {"env": "HF_TOKEN"}}}) == []
    found = literal_secrets({"secrets": {"hf": "plain"}})
    assert [d.path for d in found] == [("secrets", "hf")]
    assert "plain" not in found[0].format()


def test_ordinary_strings_are_not_secrets() -> None:
    assert literal_secrets({"model": {"uri": "hf://meta-llama/Llama-3.2-1B"},
                            "metadata": {"name": "hf-token-demo"}}) == []


@pytest.mark.slow
def test_the_loss_scaler_refuses_fp16_gradients_as_the_autocast_fp16_rule_says() -> None:
    """rule.precision-autocast-fp16 quotes torch: its GradScaler's step unscales first and
    refuses a trained fp16 weight's gradient (fp32 ones, as under mixed, pass)."""
    torch = pytest.importorskip("torch")
    for dtype, refused in ((torch.float16, True), (torch.float32, False)):
        weight = torch.nn.Parameter(torch.ones(4, dtype=dtype))
        optimizer = torch.optim.AdamW([weight])
        scaler = torch.amp.GradScaler("cpu")
        scaler.scale(weight.float().sum()).backward()
        if refused:
            with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
                scaler.step(optimizer)
        else:
            scaler.step(optimizer)
