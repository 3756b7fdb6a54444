"""The field contract, generated from the JSON Schema: every leaf field x every target.

For each leaf of ``schemas/ftspec.schema.json`` and each compile target, a base spec that
compiles cleanly for that target is compiled twice: as is (with the leaf's *context*: the
optional section or list item it lives in, filled with its required fields) and with the
leaf moved off its default. The outcome is

- ``diagnosed``: a new diagnostic *about the leaf* — located at the field, at its parent
  section or inside it, or one the target declares for the field (``ABOUT`` in
  ``ftspec.targets.contract``) — or a contract warning on a section holding it says the
  target does not honour it;
- ``changed``: the artifacts differ (compiled with the spec hash fixed: every change moves
  it, and targets derive names from it);
- ``refused``: the context itself is refused by the target (the leaf can never reach it);
- ``unproven``: the new value made the spec invalid for an unrelated reason, so neither
  of the above can be shown (the generator must vary the leaf otherwise: ``CONTEXTS``);
- ``silent``: none of these — the field is dropped without a word.

Pure: validation, checks and compile only (no subprocess, no network).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from ftspec.compiler.pipeline import CompileOptions, compile_spec
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.loader import parse_yaml
from ftspec.targets.contract import ABOUT, NOT_IN_ARTIFACTS

from helpers.jobs import BASE, merge

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "schemas" / "ftspec.schema.json"
ITEM = "[]"

TARGET_BASES: dict[str, dict[str, Any]] = {
    "torchtune": {"deploy": {"target": "local"}},
    "accelerate": {"launcher": "accelerate", "deploy": {"target": "local"}},
    "fms_hf_tuning": {"launcher": "fms_hf_tuning", "deploy": {"target": "local"},
                      "data": {"train": {"uri": "pvc://data/rows.jsonl", "format": "text",
                                         "column_map": None}}},
    "kubeflow": {"deploy": {"target": "kubeflow"}},
    "kuberay": {"deploy": {"target": "kuberay", "kuberay": {"image": "acme/ft:1"}}},
    "ray": {"deploy": {"target": "ray", "ray": {"address": "http://127.0.0.1:8265"}},
            "secrets": {"hf_token": {"secretRef": None, "env": "HF_TOKEN"}}},
}
"""Each target's base: helpers.jobs.BASE (LoRA on Llama 3.2 1B, 4 A100s, torchtune)."""

CONTEXTS: dict[tuple[str, ...], dict[str, Any]] = {
    ("data", "mixture"): {"data": {"train": None, "mixture": {"datasets": [
        {"uri": "hf://org/a", "proportion": 0.5}, {"uri": "hf://org/b", "proportion": 0.5}]}}},
    ("data", "validation"): {"data": {"validation": {"uri": "hf://org/val"}},
                             "training": {"evaluation": {"strategy": "epoch"}}},
    ("deploy", "kubeflow", "runtime"): {"deploy": {"kubeflow": {"runtime": {
        "name": "torchtune-llama3.2-1b"}}}},
    ("deploy", "scheduling", "tolerations"): {"deploy": {"scheduling": {"tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Exists"}]}}},
    ("distributed", "ddp"): {"distributed": {"strategy": "ddp", "ddp": {}}},
    ("distributed", "deepspeed"): {"distributed": {"strategy": "deepspeed", "deepspeed": {}}},
    ("distributed", "fsdp"): {"distributed": {"strategy": "fsdp", "fsdp": {}}},
    ("method", "ia3"): {"method": {"kind": "ia3", "lora": None, "ia3": {}}},
    ("method", "prompt_tuning"): {"method": {"kind": "prompt_tuning", "lora": None,
                                             "prompt_tuning": {}}},
    ("method", "quantization"): {"method": {"kind": "qlora", "quantization": {}}},
    ("method", "lora", "loraplus_lr_embedding"): {"method": {"lora": {
        "loraplus_lr_ratio": 16}}},  # LoRA+'s embedding rate needs LoRA+
    ("model", "architecture"): {"model": {"family": None, "uri": "hf://org/custom",
                                          "architecture": {
        "base": "llama3_2", "vocab_size": 128256, "num_layers": 16, "num_heads": 32,
        "num_kv_heads": 8, "embed_dim": 2048, "intermediate_dim": 8192, "max_seq_len": 4096}}},
    ("output",): {"output": {"uri": "pvc://outputs/run"}},
    ("launcher",): {"deploy": {"kubeflow": {"runtime": {"name": "acme-trainer"}}}},
    ("resources", "nodes"): {"training": {"global_batch_size": 16}},
    ("deploy", "kuberay", "shutdown_after_job_finishes"): {"deploy": {"kuberay": {
        "ttl_seconds_after_finished": 0}}},
    ("method", "prompt_tuning", "init"): {"method": {"prompt_tuning": {
        "init_text": "Classify the sentiment:"}}},
    ("training", "stop"): {"training": {"stop": {}}},
    ("training", "early_stopping"): {"data": {"validation": {"uri": "hf://org/val"}},
                                     "training": {"evaluation": {"strategy": "epoch"},
                                                  "early_stopping": {}}},
}
"""The smallest valid setting of an optional section, so its leaves can be varied; and what
a leaf's new value needs beside it to keep the spec valid (more nodes: a global batch the
larger world divides), set in both compiles so only the leaf differs."""

VALUES: dict[tuple[str, ...], Any] = {
    ("apiVersion",): None, ("kind",): None,  # fixed by the format: not variable
    ("data", "train", "column_map"): {"input": "question", "output": "answer"},
    ("data", "validation", "column_map"): {"input": "question", "output": "answer"},
    ("data", "mixture", "datasets", ITEM, "column_map"): {"input": "question"},
    ("data", "train", "uri"): "hf://openai/gsm8k",
    ("data", "validation", "uri"): "hf://org/val2",
    ("data", "mixture", "datasets", ITEM, "uri"): "hf://org/c",
    ("data", "mixture", "datasets", ITEM, "proportion"): None,  # must sum to 1: see below
    ("data", "train", "proportion"): 1.0,
    ("data", "validation", "proportion"): 1.0,
    ("data", "train", "prompt_func"): "mymod:prompt",
    ("data", "train", "completion_func"): "mymod:completion",
    ("data", "validation", "prompt_func"): "mymod:prompt",
    ("data", "validation", "completion_func"): "mymod:completion",
    ("data", "mixture", "datasets", ITEM, "prompt_func"): "mymod:prompt",
    ("data", "mixture", "datasets", ITEM, "completion_func"): "mymod:completion",
    ("deploy", "ray", "address"): "http://10.0.0.1:8265",
    ("deploy", "kubeflow", "runtime", "name"): "acme-llama3.2-1b",
    ("method", "kind"): "dora",  # keeps the base's LoRA settings valid
    ("deploy", "scheduling", "tolerations", ITEM, "key"): "other",
    ("deploy", "scheduling", "tolerations", ITEM, "value"): None,  # needs operator Equal
    ("distributed", "fsdp", "transformer_layer_cls"): "LlamaAttention",
    ("entrypoint", "module"): "mypkg.train",
    ("entrypoint", "script"): "train.py",
    ("metadata", "id"): "other-id",
    ("metadata", "name"): "other-name",
    ("metadata", "namespace"): "other-ns",
    ("method", "ia3", "feedforward_modules"): ["v_proj", "down_proj"],
    ("method", "ia3", "target_modules"): ["k_proj", "v_proj"],
    ("method", "lora", "modules_to_save"): ["lm_head"],
    ("method", "lora", "target_modules"): ["q_proj", "k_proj", "v_proj"],
    ("model", "architecture", "base"): None,  # changes the builder family: see the examples
    # the base above (llama3_2) ties its embeddings: the value it cannot build is untied
    ("model", "architecture", "tied_embeddings"): False,
    ("model", "family"): "llama3_2-3b",
    ("model", "revision"): "refs/pr/7",
    # the default resolves to pure for the base's bf16: the value off that default is mixed
    ("model", "precision"): "mixed",
    ("model", "tokenizer", "uri"): "hf://org/tok",
    ("model", "tokenizer", "special_tokens_uri"): "hf://org/tok/special.json",
    ("model", "uri"): "hf://meta-llama/Llama-3.2-1B",
    ("output", "uri"): "pvc://outputs/other",
    ("overrides", "accelerate"): {"debug": True},
    ("overrides", "rayjob"): {"spec": {"suspend": True}},
    ("overrides", "torchtune"): {"log_peak_memory_stats": False},
    ("overrides", "training_args"): {"report_to": "none"},
    ("overrides", "trainjob"): {"spec": {"suspend": True}},
    ("resources", "accelerator"): "nvidia-h100-80gb",
    ("resources", "cpu"): "8",
    ("resources", "memory"): "64Gi",
    ("resources", "gpus"): None,  # exclusive with gpus_per_node (a rule says so)
    ("resources", "gpus_per_node"): 2,
    ("resources", "nodes"): 2,
    ("resources", "processes_per_node"): 2,
    ("secrets",): {"wandb_api_key": {"secretRef": {"name": "wandb", "key": "key"}}},
    ("training", "checkpointing", "resume_from"): "pvc://outputs/old/checkpoint-10",
    ("training", "early_stopping", "metric"): "eval_accuracy",
    ("training", "global_batch_size"): 16,
    # rows enough for a full global batch (fewer train no step: compiler/checks.py)
    ("data", "train", "num_examples"): 1024,
    ("training", "micro_batch_size"): 1,
    ("training", "logging", "report_to"): ["tensorboard"],
    ("training", "optimizer", "betas"): [0.8, 0.95],
    ("model", "chat_template"): "{{ messages }}",
    ("model", "attn_implementation"): "eager",
    ("training", "gradient_accumulation_steps"): None,
    ("model", "device_map"): "auto",
    ("sweep", "grid"): {"training.learning_rate": [1.0e-4, 2.0e-4]},
    ("sweep", "max_parallel"): None,  # needs sweep.grid beside it
}
"""Non-default values where a generic one would be invalid or meaningless; None: the leaf is
not varied on its own (listed in ``NOT_VARIED`` with the reason)."""

MORE_VALUES: dict[tuple[str, ...], tuple[Any, ...]] = {
    ("model", "precision"): ("autocast",),
}
"""Further values of an enum leaf whose every value a target treats apart (``VALUES`` or
the generator gives the first); each is proven like that one."""

NOT_VARIED: dict[tuple[str, ...], str] = {
    ("apiVersion",): "a constant of the format",
    ("kind",): "a constant of the format",
    ("data", "mixture", "datasets", ITEM, "proportion"): "proportions must sum to 1; "
    "tests/targets cover uneven mixtures",
    ("deploy", "scheduling", "tolerations", ITEM, "value"): "needs operator Equal",
    ("model", "architecture", "base"): "changes the builder family (examples cover both)",
    ("resources", "gpus"): "exclusive with gpus_per_node, which the base sets",
    ("training", "gradient_accumulation_steps"): "derived from the batch sizes; any other "
    "value is an error of the batch arithmetic",
    ("sweep", "max_parallel"): "valid only beside sweep.grid; read by the local backend at "
    "apply (tests/unit/test_sweep_slots.py, security/test_sweep_queue.py)",
}


@dataclass(frozen=True)
class Leaf:
    path: tuple[str, ...]
    schema: dict[str, Any]


@cache
def _schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return data


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        out: dict[str, Any] = _schema()["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        return out
    if "anyOf" in node:
        subs = [_resolve(s) for s in node["anyOf"] if s.get("type") != "null"]
        if len(subs) == 1:
            return {**subs[0], **{k: v for k, v in node.items() if k != "anyOf"}}
    return node


def leaves() -> list[Leaf]:
    """Every leaf field of the schema (objects with properties are walked, list items of
    object type too, as ``[]``)."""
    out: list[Leaf] = []

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        node = _resolve(node)
        if node.get("type") == "object" and "properties" in node:
            for key, sub in node["properties"].items():
                walk(sub, path + (key,))
            return
        items = _resolve(node.get("items", {})) if node.get("type") == "array" else {}
        if items.get("type") == "object" and "properties" in items:
            walk(items, path + (ITEM,))
            return
        out.append(Leaf(path, node))

    walk(_schema(), ())
    return out


def _default(leaf: Leaf, base: Any) -> Any:
    return base if base is not None else leaf.schema.get("default")


def new_value(leaf: Leaf, current: Any) -> Any:
    """A valid value different from ``current`` (the base's or the schema default)."""
    if leaf.path in VALUES:
        return VALUES[leaf.path]
    s = leaf.schema
    now = _default(leaf, current)
    if "enum" in s:
        return next((v for v in s["enum"] if v != now), None)
    kind = s.get("type")
    if kind == "boolean":
        return not bool(now)
    if kind in ("integer", "number"):
        low = s.get("minimum", s.get("exclusiveMinimum", 0))
        high = s.get("maximum", s.get("exclusiveMaximum"))
        if now is None:
            value = max(2, low + 1) if kind == "integer" else (low + (high or 1)) / 2 \
                if high is not None else low + 0.5
        else:
            value = now + 1 if kind == "integer" else now / 2 if now else 0.5
        if high is not None and value >= high:
            value = (low + high) / 2 if kind == "number" else low + 1
        return value
    if kind == "string":
        return "contract-value" if now != "contract-value" else "other-value"
    if kind == "object":
        return {"ftspec-contract": "1"}
    if kind == "array":
        return ["contract-value"]
    return None


def _get(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if key == ITEM:
            data = data[0] if isinstance(data, list) and data else None
        elif isinstance(data, dict):
            data = data.get(key)
        else:
            return None
    return data


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node: Any = data
    for i, key in enumerate(path[:-1]):
        nxt = path[i + 1]
        if key == ITEM:
            node = node[0]
            continue
        if node.get(key) is None:
            node[key] = [{}] if nxt == ITEM else {}
        node = node[key]
    node[path[-1]] = value


def context_for(path: tuple[str, ...]) -> dict[str, Any]:
    change: dict[str, Any] = {}
    for prefix, ctx in CONTEXTS.items():
        if path[: len(prefix)] == prefix:
            change = merge(change, ctx)
    return change


def base_doc(target: str, path: tuple[str, ...]) -> dict[str, Any]:
    return merge(merge(BASE, TARGET_BASES[target]), context_for(path))


def changed_doc(doc: dict[str, Any], leaf: Leaf, value: Any = None) -> dict[str, Any] | None:
    if value is None:
        value = new_value(leaf, _get(doc, leaf.path))
    if value is None:
        return None
    out = copy.deepcopy(doc)
    _set(out, leaf.path, value)
    return out


@dataclass(frozen=True)
class Result:
    ok: bool
    """No error anywhere (validation or the target's checks)."""
    artifacts: tuple[tuple[str, str], ...]
    diagnostics: frozenset[tuple[str, str, tuple[str, ...]]]
    """(severity, code, path) of every diagnostic."""


def run(doc: dict[str, Any], target: str) -> Result:
    return _run(yaml.safe_dump(doc, sort_keys=False), target)


@cache
def _run(text: str, target: str) -> Result:
    compiled = compile_spec(parse_yaml(text, "spec.yaml"), "artifacts",
                            CompileOptions(target=target))
    diags: list[Diagnostic] = list(compiled.diagnostics)
    if compiled.job is None:
        return Result(False, (), _keys(diags))
    if not compiled.ok:
        return Result(False, (), _keys(diags))
    # No artifact carries a hash of the spec with its defaults (it moves with every
    # change, and with every default a new ftspec adds): the artifacts as compiled differ
    # only by what the field itself does.
    return Result(True, tuple((a.path, a.content) for a in compiled.artifacts), _keys(diags))


def _keys(diags: list[Diagnostic]) -> frozenset[tuple[str, str, tuple[str, ...]]]:
    return frozenset((d.severity.value, d.code or "", tuple(map(str, d.path)))
                     for d in diags)


def _about(code: str, diag_path: tuple[str, ...], leaf: tuple[str, ...]) -> bool:
    """A diagnostic about ``leaf``: at the field, at its parent (a section of at least two
    keys: ``resources`` alone says nothing about one field), inside it, or declared for
    it by the target (``ABOUT``; a section of ``SECTIONS`` for every field in it)."""
    bare = tuple(p for p in leaf if p != ITEM)
    d = tuple(p for p in diag_path if not p.isdigit())
    if d[: len(bare)] == bare and d:
        return True  # the field itself or a key inside it
    if len(d) >= 2 and d == bare[:-1]:
        return True
    if code == "contract.other-target" and d and bare[: len(d)] == d:
        return True  # the section the leaf lives in, declared in SECTIONS
    return any(tuple(p) == bare for p in ABOUT.get(code, ()))


def _section_of(code: str, diag_path: tuple[str, ...], leaf: tuple[str, ...]) -> bool:
    """A diagnostic on an optional section the leaf lives in (the base already has it)."""
    bare = tuple(p for p in leaf if p != ITEM)
    if len(diag_path) == 1 and not code.startswith("contract."):
        return False  # e.g. a memory warning on ``resources`` is not about one field
    return 1 <= len(diag_path) <= len(bare) and bare[: len(diag_path)] == diag_path


def outcome(target: str, leaf: Leaf, value: Any = None) -> tuple[str, str]:
    """(outcome, detail) for one leaf x target, moved to ``value`` (None: ``new_value``)."""
    doc = base_doc(target, leaf.path)
    before = run(doc, target)
    if not before.ok:
        return "refused", "context refused: " + ", ".join(
            f"{c}@{'.'.join(p)}" for s, c, p in sorted(before.diagnostics) if s == "error")
    after_doc = changed_doc(doc, leaf, value)
    if after_doc is None:
        return "not-varied", NOT_VARIED.get(leaf.path, "no value")
    after = run(after_doc, target)
    section = [(c, p) for s, c, p in before.diagnostics if _section_of(c, p, leaf.path)]
    new = after.diagnostics - before.diagnostics
    errors = [(c, p) for s, c, p in new if s == "error" and _about(c, p, leaf.path)]
    if errors:
        return "diagnosed", "error " + ", ".join(f"{c}@{'.'.join(p)}" for c, p in errors)
    if not after.ok:
        return "unproven", "unrelated error " + ", ".join(
            f"{c}@{'.'.join(p)}" for s, c, p in sorted(new) if s == "error")
    warnings = [(c, p) for s, c, p in new if s == "warning" and _about(c, p, leaf.path)]
    if after.artifacts != before.artifacts:
        return "changed", ""
    if section:
        return "diagnosed", "section " + ", ".join(f"{c}@{'.'.join(p)}" for c, p in section)
    if warnings:
        return "diagnosed", "warning " + ", ".join(f"{c}@{'.'.join(p)}" for c, p in warnings)
    if declared(leaf.path):
        return "declared", NOT_IN_ARTIFACTS[declared(leaf.path) or ()]
    return "silent", repr(_get(after_doc, leaf.path))


def declared(path: tuple[str, ...]) -> tuple[str, ...] | None:
    """The NOT_IN_ARTIFACTS entry covering ``path`` (``*`` matches a list item)."""
    for entry in NOT_IN_ARTIFACTS:
        mapped = tuple(ITEM if p == "*" else p for p in entry)
        if path[: len(mapped)] == mapped:
            return entry
    return None


def matrix(targets: tuple[str, ...] = tuple(TARGET_BASES)) -> Iterator[tuple[str, Leaf, Any]]:
    """(target, leaf, value): every leaf at its generated value, and at ``MORE_VALUES``."""
    for leaf in leaves():
        for value in (None, *MORE_VALUES.get(leaf.path, ())):
            for target in targets:
                yield target, leaf, value


def figures() -> dict[str, Any]:
    """Counts per outcome and the silent drops, for the report (``python -m helpers.contract``)."""
    from collections import Counter

    counts: Counter[str] = Counter()
    silent: list[str] = []
    for target, leaf, value in matrix():
        result, detail = outcome(target, leaf, value)
        counts[result] += 1
        if result in ("silent", "unproven"):
            silent.append(f"{result}: {target} {'.'.join(leaf.path)} = {detail}")
    return {"leaves": len(leaves()), "targets": len(TARGET_BASES), "outcomes": dict(counts),
            "silent": silent}


if __name__ == "__main__":
    report = figures()
    print(json.dumps({k: v for k, v in report.items() if k != "silent"}, indent=1))
    print("\n".join(report["silent"]))
