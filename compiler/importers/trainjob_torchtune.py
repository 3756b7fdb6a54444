"""A TrainJob on a torchtune runtime: what trains is torchtune's config plus the TrainJob's args.

The Trainer's torchtune plugin picks the recipe config from the runtime's model and the
args (``kubeflow_torchtune`` documents the table: LoRA when an arg sets
``model.lora_attn_modules``, QLoRA with ``model.quantize_base=True``, one device or
several, one node or more), runs ``tune run RECIPE --config CONFIG ARGS...`` and appends
the keys the runtime owns (output_dir, tokenizer and checkpoint paths under /workspace).
The same config and args go through ``import torchtune`` (its draft and residue), so the
spec's model, data, method and training are the values that run; origins point at the
TrainJob's arg lines or at torchtune's shipped config.

Args: ftspec writes its own list (``kubeflow_torchtune.trainer_args``). When both lists
give the same resolved config the spec's list is used (``same_args``); otherwise, and
always for an adopted live object (the trainer is immutable: a new list would replace
it), the TrainJob's list is kept verbatim in ``overrides.trainjob``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.spec.catalog.models import MODEL_FAMILIES
from ftspec.spec.diagnostics import Diagnostic, Severity, Span
from ftspec.targets.kubeflow_torchtune import (
    KUBEFLOW_PATHS,
    LOCATION_KEYS,
    RUNTIME_MODELS,
    SHORTHAND_COMPONENTS,
)

SECTIONS = ("model", "data", "method", "training", "distributed", "launcher")
ARGS: tuple[str, ...] = ("spec", "trainer", "args")
_ORIGIN_ARG = re.compile(r"^from the argument (.*)$")
SameArgs = Callable[[list[str]], list[str]]
"""The config keys where these args resolve differently from the TrainJob's (none: same)."""


def controller_config(family: str, args: list[str], nodes: int, procs: int | None,
                      gpus: int) -> str | None:
    """The shipped config the torchtune plugin runs (``llama3_2/1B_lora_single_device``)."""
    fam = MODEL_FAMILIES.get(family)
    if fam is None or fam.torchtune is None:
        return None
    folder, size = fam.torchtune
    lora = any(a.startswith("model.lora_attn_modules") for a in args)
    qlora = "model.quantize_base=True" in args and "model.use_dora=True" not in args
    kind = "qlora" if lora and qlora else "lora" if lora else "full"
    if nodes > 1:
        return f"{folder}/{size}_full_multinode" if kind == "full" else None
    single = procs == 1 or (procs is None and gpus <= 1)
    return f"{folder}/{size}_{kind}{'_single_device' if single else ''}"


def expand(arg: str) -> str:
    """The SDK's ``dataset=X`` / ``loss=X`` shorthand as ``tune run`` reads it."""
    key, sep, value = arg.partition("=")
    return f"{key}._component_={value}" if sep and key in SHORTHAND_COMPONENTS else arg


def runtime_args(base: dict[str, Any]) -> list[str]:
    """The keys the runtime appends: its /workspace paths, file names kept from the base."""
    ckpt = str((base.get("checkpointer") or {}).get("checkpoint_dir", "")).rstrip("/")
    out = [f"output_dir={KUBEFLOW_PATHS.output_dir}",
           f"checkpointer.checkpoint_dir={KUBEFLOW_PATHS.model_dir}"]
    tok = base.get("tokenizer") or {}
    for key in ("path", "merges_file"):
        value = tok.get(key)
        if isinstance(value, str):
            rel = value[len(ckpt) + 1:] if ckpt and value.startswith(ckpt + "/") else \
                value.rsplit("/", 1)[-1]
            out.append(f"tokenizer.{key}={KUBEFLOW_PATHS.model_dir}/{rel}")
    return out


def resolved(config: Path, args: list[str]) -> dict[str, Any]:
    from ftspec.compiler.importers.torchtune_source import load_source

    data: dict[str, Any] = load_source(config, tuple(expand(a) for a in args)).data
    return data


def differing(a: dict[str, Any], b: dict[str, Any], prefix: str = "",
              component: str | None = None) -> list[str]:
    """Dotted keys whose values differ between two resolved configs; a key one side leaves
    out counts as equal when leaving it out gives the other side's value (torchtune's
    defaults table, ``is_implicit``)."""
    from ftspec.targets.torchtune_defaults import is_implicit

    out: list[str] = []
    for key in list(a) + [k for k in b if k not in a]:
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            same = x.get("_component_") == y.get("_component_")
            out += differing(x, y, f"{prefix}{key}.", x.get("_component_") if same else None) \
                if same else [prefix + str(key)]
        elif (key not in a or key not in b) and is_implicit(
                component, str(key), y if key not in a else x):
            continue
        elif x != y or _kind(x) != _kind(y):
            out.append(prefix + str(key))
    return out


def _kind(value: Any) -> str:
    """Numbers compare by value (32 and 32.0 build the same module); bools stay apart."""
    if isinstance(value, bool):
        return "bool"
    return "number" if isinstance(value, int | float) else type(value).__name__


def torchtune_sections(d: SpecDraft, *, live: bool) -> tuple[bool, SameArgs | None]:
    """Fill model/data/method/training from the runtime's config and the args: (done,
    ``same_args`` for the residue, None to keep the TrainJob's args as they are). Not done:
    no torchtune config for the runtime (imported as a custom trainer then)."""
    from ftspec.compiler.importers.torchtune import torchtune_draft
    from ftspec.targets.torchtune_configs import TorchtuneMissing, configs_dir, load_config

    spec = d.source.data["spec"]
    trainer = spec.get("trainer") or {}
    args = [str(a) for a in trainer.get("args") or []]
    runtime = str(spec["runtimeRef"]["name"])
    family = RUNTIME_MODELS.get(runtime)
    res = d.data.get("resources", {})
    name = controller_config(family or "", args, int(res.get("nodes", 1)),
                             trainer.get("numProcPerNode") if isinstance(
                                 trainer.get("numProcPerNode"), int) else None,
                             int(res.get("gpus_per_node") or 0))
    if family is None or name is None:
        d.warn(("spec", "runtimeRef", "name"), f"{runtime}: no torchtune config ftspec knows "
               "for this runtime and these args; imported as a custom trainer")
        return False, None
    if not res.get("gpus_per_node") and not isinstance(trainer.get("numProcPerNode"), int):
        d.warn(("spec", "trainer"), "no nvidia.com/gpu in resourcesPerNode: the runtime's "
               f"GPUs decide the recipe the Trainer runs; {name} (one device) assumed — set "
               "resourcesPerNode to be sure")
    try:
        config = configs_dir() / f"{name}.yaml"
        base = load_config(name)
    except (TorchtuneMissing, OSError) as exc:
        d.warnings.append(Diagnostic(
            Severity.ERROR, f"reading the runtime's torchtune config {name} needs torchtune: "
            f"{exc}", path=("spec", "runtimeRef", "name"),
            span=d.source.span_of(("spec", "runtimeRef", "name")),
            hint="install ftspec's torchtune extra", code="import.torchtune-missing"))
        return True, None
    full = [expand(a) for a in args] + runtime_args(base)
    tt = torchtune_draft(config, tuple(full), nproc=int(res.get("processes_per_node") or
                                                       res.get("gpus_per_node") or 1),
                         nnodes=int(res.get("nodes", 1)),
                         accelerator=str(res.get("accelerator") or "nvidia-a100-80gb"))
    _copy(d, tt, config, name, full, len(args))
    _locations(d)
    _written_by_target(d)
    if live:
        return True, None
    return True, lambda compiled: differing(resolved(config, args), resolved(config, [
        a.replace("$$", "$") for a in compiled]))  # Kubernetes reads $$ as $


def _copy(d: SpecDraft, tt: SpecDraft, config: Path, name: str, full: list[str],
          given: int) -> None:
    for section in SECTIONS:
        if section in tt.data:
            d.data[section] = tt.data[section]
    raw = (tt.data.get("overrides") or {}).get("torchtune")
    if raw:
        d.data.setdefault("overrides", {})["torchtune"] = raw
    for path, origin in tt.origins.items():
        if path[:1] in [(s,) for s in SECTIONS] or path[:2] == ("overrides", "torchtune"):
            d.origins[path] = _origin(d, origin, config, name, full, given)
    for w in tt.warnings:
        span = w.span
        if span is not None and span.file.startswith("--set["):
            index = int(span.file[6:-1])
            span = _arg_span(d, index, given)
        elif span is not None and span.file == str(config):
            span = Span(f"torchtune:{name}.yaml", span.line, span.col)
        d.warnings.append(replace(w, span=span))


def _arg_span(d: SpecDraft, index: int, given: int) -> Span:
    if index < given:
        return d.source.span_of(ARGS + (index,))
    return d.source.span_of(("spec", "runtimeRef", "name"))


def _origin(d: SpecDraft, origin: str, config: Path, name: str, full: list[str],
            given: int) -> str:
    m = _ORIGIN_ARG.match(origin)
    if m and m.group(1) in full:
        index = full.index(m.group(1))
        if index >= given:
            return f"the runtime sets {m.group(1)}"
        span = d.source.span_of(ARGS + (index,))
        return f"from {span.file}:{span.line}"
    return origin.replace(str(config), f"torchtune's {name}.yaml (the runtime's config)")


def _written_by_target(d: SpecDraft) -> None:
    """Raw keys the kubeflow target writes itself: the LoRA flags the controller picks the
    recipe from (given by method.kind) and the dataset's location (from the initializer's
    URI). Kept raw they would say nothing new; if the target's own values differ, the args
    comparison keeps the TrainJob's args instead."""
    raw = (d.data.get("overrides") or {}).get("torchtune") or {}
    kind = (d.data.get("method") or {}).get("kind")
    implied = {"model.quantize_base": kind == "qlora", "model.use_dora": kind == "dora"}
    for key in list(raw):
        if (key in implied and raw[key] is implied[key]) or key in LOCATION_KEYS:
            del raw[key]
            d.origins.pop(("overrides", "torchtune", key), None)
            d.warnings = [w for w in d.warnings if w.path != tuple(key.split("."))]
    if not raw and "overrides" in d.data:
        d.data["overrides"].pop("torchtune", None)
        if not d.data["overrides"]:
            del d.data["overrides"]


def _locations(d: SpecDraft) -> None:
    """The initializers download model and data: their URIs are the spec's locations."""
    init = d.source.data["spec"].get("initializer") or {}
    model = d.data.setdefault("model", {})
    model.pop("tokenizer", None)
    uri = (init.get("model") or {}).get("storageUri")
    if isinstance(uri, str):
        d.put(("model", "uri"), uri, d.origin_of(("spec", "initializer", "model",
                                                 "storageUri")))
    data_uri = (init.get("dataset") or {}).get("storageUri")
    train = (d.data.get("data") or {}).get("train")
    if isinstance(data_uri, str) and isinstance(train, dict):
        d.put(("data", "train", "uri"), data_uri,
              d.origin_of(("spec", "initializer", "dataset", "storageUri")))
