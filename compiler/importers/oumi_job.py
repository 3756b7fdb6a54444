"""``ftspec import oumi``: where it runs. An Oumi ``JobConfig`` (``--job``: SkyPilot
``resources.accelerators`` such as ``"A100:4"``, ``num_nodes``) gives ``resources``; without
one, ``--nproc-per-node`` / ``--nnodes`` / ``--accelerator`` do, as for ``import trl``.
The ``fsdp`` section gives ``distributed`` (Oumi runs accelerate's FSDP1 plugin)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import SpecDraft, layer_class_names, not_this_tool
from ftspec.compiler.importers.oumi_defaults import JOB_DEFAULTS, SKYPILOT_ACCELERATORS, TOOL
from ftspec.compiler.importers.oumi_source import OumiReader
from ftspec.compiler.importers.topology import resources_from_flags
from ftspec.spec.loader import load_spec_file

SHARDING = {"FULL_SHARD": "full_shard", "SHARD_GRAD_OP": "shard_grad_op",
            "HYBRID_SHARD": "hybrid_shard", "HYBRID_SHARD_ZERO2": "hybrid_shard_zero2",
            "NO_SHARD": "no_shard"}
STATE_DICT = {"FULL_STATE_DICT": "full", "SHARDED_STATE_DICT": "sharded"}
AUTO_WRAP = {"TRANSFORMER_BASED_WRAP": "transformer", "SIZE_BASED_WRAP": "size",
             "NO_WRAP": "none"}
PREFETCH = {"BACKWARD_PRE": "backward_pre", "BACKWARD_POST": "backward_post",
            "NO_PREFETCH": "none"}
_ACCEL = re.compile(r"^\s*([A-Za-z0-9-]+)\s*(?::\s*(\d+))?\s*$")


def import_resources(draft: SpecDraft, job: Path | None, nproc: int | None,
                     nnodes: int | None, accelerator: str) -> int:
    """Fill ``resources``; returns the world size (processes across nodes)."""
    if job is not None:
        return _job(draft, job)
    return resources_from_flags(draft, nproc, nnodes, accelerator, "an Oumi training config",
                                "its job config says (--job, or --nproc-per-node)")


def _job(main: SpecDraft, path: Path) -> int:
    doc = load_spec_file(path)
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("resources"), dict):
        first = next(iter(data), None) if isinstance(data, dict) else None
        raise not_this_tool(doc, (first,) if first is not None else (), "not an Oumi "
                            "JobConfig: no resources section", "give the YAML `oumi launch "
                            "up -c` reads as --job")
    # The job's values and warnings point at the job file; data and origins are shared.
    draft = SpecDraft(doc, data=main.data, origins=main.origins, warnings=main.warnings)
    res: dict[str, Any] = data["resources"]
    nodes = data.get("num_nodes", JOB_DEFAULTS["num_nodes"])
    draft.put(("resources", "nodes"), int(nodes), draft.origin_of(("num_nodes",))
              if "num_nodes" in data else f"{TOOL} default (JobConfig.num_nodes)")
    gpus = 0
    spec_accel = _accelerator(draft, res.get("accelerators"))
    if spec_accel is not None:
        name, gpus = spec_accel
        at = draft.origin_of(("resources", "accelerators"))
        draft.put(("resources", "gpus_per_node"), gpus, at)
        draft.put(("resources", "accelerator"), name, f"{at} (SkyPilot's name)")
    else:
        draft.put(("resources", "gpus_per_node"), 0, "the job config names no accelerators")
    for key, value in res.items():
        if key != "accelerators":
            draft.warn(("resources", key), f"{value!r} is SkyPilot's "
                       "(cloud placement): not imported")
    for key, value in data.items():
        if key == "name" and isinstance(value, str):
            name = re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")[:63].rstrip("-")
            if name[:1].isalpha():
                draft.put(("metadata", "name"), name, draft.origin_of(("name",)))
                continue
        if key not in ("resources", "num_nodes"):
            draft.warn((key,), f"{key} of the job config has no spec field: not imported"
                       + (" (ftspec writes the launch command)" if key in ("run", "setup")
                          else ""))
    return max(gpus, 1) * int(nodes)


def _accelerator(draft: SpecDraft, value: Any) -> tuple[str, int] | None:
    if value is None:
        return None
    m = _ACCEL.match(str(value))
    name = SKYPILOT_ACCELERATORS.get(m.group(1).upper() if m else "") if m else None
    if m is None or name is None:
        draft.warn(("resources", "accelerators"), f"accelerators {value!r}: not a SkyPilot "
                   "GPU the spec names (" + ", ".join(SKYPILOT_ACCELERATORS) + ")")
        return None
    return name, int(m.group(2) or 1)


def import_distributed(r: OumiReader) -> None:
    d, f = r.draft, ("distributed", "fsdp")
    if r.section("deepspeed") and r.value("deepspeed", "enable_deepspeed") is True:
        r.warn("deepspeed", "enable_deepspeed", "DeepSpeed settings are not imported: set "
               "distributed.deepspeed by hand")
    if not r.value("fsdp", "enable_fsdp"):
        d.put(("distributed", "strategy"), "auto", f"{r.origin('fsdp', 'enable_fsdp')}: "
              "torchrun's DDP on several GPUs")
        for key in r.section("fsdp"):
            if key != "enable_fsdp":
                r.warn("fsdp", key, f"fsdp.{key}: fsdp.enable_fsdp is false: not used")
        return
    d.put(("distributed", "strategy"), "fsdp", r.origin("fsdp", "enable_fsdp"))
    d.put(f + ("version",), 1, "Oumi runs accelerate's FSDP1 plugin")
    for key, field, table in (("sharding_strategy", "sharding", SHARDING),
                              ("state_dict_type", "state_dict_type", STATE_DICT),
                              ("auto_wrap_policy", "auto_wrap", AUTO_WRAP),
                              ("backward_prefetch", "backward_prefetch", PREFETCH)):
        value = str(r.value("fsdp", key)).upper()
        if value in table:
            r.put(f + (field,), "fsdp", key, convert=lambda v, t=table: t[str(v).upper()])
        else:
            r.warn("fsdp", key, f"fsdp.{key} {value} has no spec value")
    for key in ("cpu_offload", "forward_prefetch", "sync_module_states"):
        r.put(f + (key,), "fsdp", key)
    if str(r.value("fsdp", "auto_wrap_policy")).upper() == "SIZE_BASED_WRAP":
        r.put(f + ("min_num_params",), "fsdp", "min_num_params")
    elif r.has("fsdp", "min_num_params"):
        r.warn("fsdp", "min_num_params", "min_num_params is read by SIZE_BASED_WRAP only: "
               "not imported")
    r.put(f + ("transformer_layer_cls",), "fsdp", "transformer_layer_cls",
          convert=layer_class_names)
    orig = r.value("fsdp", "use_orig_params")
    if orig is None:  # core/distributed.py: False for PEFT unless compiled
        peft = bool(r.value("training", "use_peft")) and not r.value("training", "compile")
        d.put(f + ("use_orig_params",), not peft, f"{r.origin('fsdp', 'use_orig_params')}: "
              "null is false for PEFT without training.compile, else true")
    else:
        r.put(f + ("use_orig_params",), "fsdp", "use_orig_params")
    if r.value("fsdp", "mixed_precision") is not None:
        r.warn("fsdp", "mixed_precision", "fsdp.mixed_precision: the spec's precision is "
               "model.dtype: not imported")
