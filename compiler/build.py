"""Spec -> Job: every derived value computed once."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from ftspec.compiler.memory import estimate_memory
from ftspec.compiler.summary import ml_summary
from ftspec.spec.catalog.family import ModelFamily
from ftspec.spec.catalog.models import MODEL_FAMILIES
from ftspec.spec.ir import InputRef, Job, ModelFacts
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.method import ALL_LINEAR, LORA_FAMILY
from ftspec.spec.module_names import LINEAR_MODULES, MLP_MODULES
from ftspec.spec.ownership import ownership_labels
from ftspec.spec.platforms import LAUNCHER_FACTS, NEWEST_TRAINER, PLATFORMS
from ftspec.spec.rows import row_format
from ftspec.spec.sweep import Point, with_point
from ftspec.targets.kube_names import MAX_LABEL, NameLimit, name_limit, runtime_of


def _digest(data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def spec_hash(spec: FineTuneSpec) -> str:
    """The spec with every default: a cache key, never a reason to change a live run."""
    return _digest(spec.model_dump(mode="json"))


def written_digest(spec: FineTuneSpec) -> str:
    """The spec as the user wrote it (no defaults): unchanged by a new ftspec."""
    return _digest(spec.model_dump(mode="json", exclude_unset=True))


def _leaves(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            _leaves(sub, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = value


def spec_defaults(spec: FineTuneSpec) -> dict[str, Any]:
    """dotted path -> value for every leaf the spec took from ftspec's defaults."""
    full: dict[str, Any] = {}
    written: dict[str, Any] = {}
    _leaves(spec.model_dump(mode="json"), "", full)
    _leaves(spec.model_dump(mode="json", exclude_unset=True), "", written)
    return {path: value for path, value in full.items() if path not in written
            and not any(path.startswith(w + ".") or w.startswith(path + ".") for w in written)}


def _label_value(text: str) -> str:
    """``text`` as a label value (lowercase letters, digits, ``-_.``; at most 63 chars)."""
    return re.sub(r"[^a-z0-9-_.]+", "-", text.lower()).strip("-_.")[:63].rstrip("-_.")


def spec_id(spec: FineTuneSpec) -> str:
    """The job's identity: ``metadata.id`` when the spec sets one, else ``metadata.name``
    (what the user wrote, never the file's name: renaming a spec file keeps its runs)."""
    if spec.metadata.id:
        return spec.metadata.id
    return _label_value(spec.metadata.name) or "ftspec"


def file_id(source: Path | str) -> str:
    """The identity an earlier ftspec gave a spec without ``metadata.id``: its file's
    stem. Plan finds runs applied under it and moves them (``reconciler.identity``)."""
    return _label_value(Path(source).stem)


def point_id(ident: str, spec: FineTuneSpec, point: Point | None) -> tuple[str, str]:
    """A sweep point's (identity, job name): ``spec_id`` and ``metadata.name`` with the
    point's label (``ftspec.spec.sweep.with_point``); outside a sweep, both unchanged."""
    return _point_id(ident, spec, point, name_limit(spec))


def _point_id(ident: str, spec: FineTuneSpec, point: Point | None, limit: NameLimit | None
              ) -> tuple[str, str]:
    """``point_id`` under ``limit``, the spec's ``name_limit`` (the runtime's: JobSet and
    KubeRay derive longer names)."""
    return with_point(ident, point), with_point(spec.metadata.name, point,
                                                limit.limit if limit else MAX_LABEL)


def model_facts(spec: FineTuneSpec) -> ModelFacts:
    """The model's facts: its catalog family's, or those of the family its custom
    ``model.architecture`` makes (custom: torchtune's builders of its base, no shipped
    config but the base's); ``model.params_b`` overrides the count either way."""
    m = spec.model
    if m.architecture is not None:
        from ftspec.spec.catalog.models import CUSTOM_BASES

        a = m.architecture
        return replace(
            _facts_of(a.as_family(), m.params_b),
            torchtune_config=None if a.base is None else
            ("llama2", "7B") if a.base == "llama2" else ("llama3_2", "1B"),
            torchtune_builder=CUSTOM_BASES[a.base] if a.base else None, custom=True,
        )
    assert m.family is not None  # guaranteed by the rules
    return _facts_of(MODEL_FAMILIES[m.family], m.params_b)


def _facts_of(f: ModelFamily, params_b: float | None) -> ModelFacts:
    """A family's numbers as the IR carries them (one copy for catalog and custom models)."""
    return ModelFacts(
        display=f.display, params_b=params_b or f.params_b, num_layers=f.num_layers,
        hidden_size=f.hidden_size, num_heads=f.num_heads, num_kv_heads=f.num_kv_heads,
        intermediate_size=f.intermediate_size, vocab_size=f.vocab_size,
        hf_layer_cls=f.hf_layer_cls, torchtune_config=f.torchtune,
        torchtune_builder=f.torchtune_builder, head_dim=f.attn_head_dim,
        tied_embeddings=f.tied_embeddings, num_experts=f.num_experts, gated_mlp=f.gated_mlp,
        context_len=f.max_seq_len, shared_intermediate_size=f.shared_intermediate_size,
        mamba=f.mamba, vision=f.vision, linear_attention=f.linear_attention,
        attn_output_gate=f.attn_output_gate, moe_layer_step=f.moe_layer_step,
        dense_intermediate_size=f.dense_intermediate_size,
    )


def _lora_modules(spec: FineTuneSpec) -> tuple[str, ...]:
    lora = spec.method.lora_settings
    if spec.method.kind not in LORA_FAMILY:
        return ()
    modules = list(lora.target_modules)
    if modules == [ALL_LINEAR]:  # a decoder block's linear layers, as torchtune names them
        modules = list(LINEAR_MODULES)
    if lora.mlp:
        modules += [m for m in MLP_MODULES if m not in modules]
    return tuple(modules)


def build_job(spec: FineTuneSpec, source: Path | None = None,
              trainer_version: str | None = None, point: Point | None = None) -> Job:
    """The IR of a validated spec (the rules guarantee the arithmetic is consistent).

    ``trainer_version``: the Kubeflow Trainer API the live cluster serves, when a backend
    detected it; otherwise the spec's pin (``auto`` = newest). ``point``: the sweep point
    ``spec`` is (its values already in ``spec``)."""
    r = spec.resources
    t = spec.training
    world = r.world_size
    accum = t.gradient_accumulation_steps or max(
        1, t.global_batch_size // (t.micro_batch_size * world)
    )
    strategy = _strategy(spec)
    steps_per_epoch, total, warmup = _steps(spec, world, accum)
    facts = model_facts(spec)
    lora_modules = _lora_modules(spec)
    memory = estimate_memory(
        spec, facts, lora_modules, strategy=strategy, world_size=world,
        procs_per_node=r.procs_per_node, micro_batch_size=t.micro_batch_size, accumulation=accum,
    )
    base = spec_id(spec)
    limit = name_limit(spec)
    ident, name = _point_id(base, spec, point, limit)
    digest = spec_hash(spec)
    pin = None if spec.deploy.kubeflow.trainer_version == "auto" else \
        spec.deploy.kubeflow.trainer_version
    labels = dict(spec.metadata.labels)
    labels.update(ownership_labels(ident, base if point is not None else None))
    job = Job(
        spec=spec, spec_id=ident, spec_hash=digest,
        name=name, namespace=spec.metadata.namespace,
        point=point.as_dict() if point is not None else {},
        launcher=spec.launcher, target=spec.deploy.target,
        nodes=r.nodes, procs_per_node=r.procs_per_node, world_size=world,
        gpus_per_node=r.gpus_on_each_node, total_gpus=r.total_gpus,
        device="cuda" if r.total_gpus > 0 else "cpu", strategy=strategy,
        micro_batch_size=t.micro_batch_size, gradient_accumulation_steps=accum,
        global_batch_size=t.global_batch_size, max_seq_len=spec.data.max_seq_len,
        tokens_per_step=t.global_batch_size * (spec.data.max_seq_len or facts.context_len),
        steps_per_epoch=steps_per_epoch, total_steps=total, warmup_steps=warmup,
        model=facts, lora_modules=lora_modules, memory=memory, row_format=row_format(spec),
        labels=labels, annotations=dict(spec.metadata.annotations),
        trainer_version=trainer_version or pin or NEWEST_TRAINER, trainer_pin=pin,
        written=written_digest(spec), defaults=spec_defaults(spec), inputs=input_refs(spec),
        cluster_runtime=_cluster_runtime(spec, limit),
    )
    return replace(job, summary=ml_summary(job))


def _cluster_runtime(spec: FineTuneSpec, limit: NameLimit | None) -> tuple[str, str] | None:
    """The runtime whose name limit ``plan`` reads from the cluster (``Job.cluster_runtime``;
    ``limit``: the spec's ``name_limit``)."""
    if PLATFORMS[spec.deploy.target].name_rule != "jobset" or limit is not None:
        return None
    found = runtime_of(spec)
    return None if found is None else (found[0], found[1])


def input_refs(spec: FineTuneSpec) -> tuple[InputRef, ...]:
    """Every location ``spec`` reads (its output left out), with its holder's identity
    rule, a dataset's loader and the model's revision."""
    refs = []
    for path, uri in spec.uris():
        if path[0] == "output":
            continue
        holder: Any = spec
        for part in path[:-1]:
            holder = holder[part] if isinstance(part, int) else getattr(holder, part, None)
        refs.append(InputRef(
            field=".".join(str(p) for p in path), uri=uri,
            identity=getattr(holder, "identity", "content"),
            loader=getattr(holder, "loader", None) if path[0] == "data" else None,
            revision=spec.model.revision if path == ("model", "uri") else None))
    return tuple(refs)


def _strategy(spec: FineTuneSpec) -> Literal["none", "ddp", "fsdp", "deepspeed"]:
    """distributed.strategy, ``auto`` resolved: none on one process, else the launcher's
    multi-rank strategy (FSDP2 for torchtune and for expert parallelism, DDP otherwise)."""
    chosen: Literal["auto", "none", "ddp", "fsdp", "deepspeed"] = spec.distributed.strategy
    if chosen != "auto":
        return chosen
    # torchtune's distributed recipes always shard with FSDP2; transformers' expert
    # parallelism shards the dense weights with FSDP2 over the same ranks
    sharded = LAUNCHER_FACTS[spec.launcher].multi_rank_strategy == "fsdp" \
        or spec.distributed.expert_parallel > 1
    multi: Literal["fsdp", "ddp"] = "fsdp" if sharded else "ddp"
    return multi if spec.resources.world_size > 1 else "none"


def _steps(spec: FineTuneSpec, world: int, accum: int
           ) -> tuple[int | None, int | None, int | None]:
    """Steps per epoch, total steps and warm-up steps, each None where the number of
    training examples (or a step count given in the spec) does not fix it."""
    t = spec.training
    examples = train_examples(spec)
    steps_per_epoch = None
    if examples is not None:
        steps_per_epoch = full_steps(examples, world, t.micro_batch_size, accum) \
            if LAUNCHER_FACTS[spec.launcher].drops_partial_batch \
            else max(1, examples // t.global_batch_size)
        if t.max_steps_per_epoch is not None:
            steps_per_epoch = min(steps_per_epoch, t.max_steps_per_epoch)
    total = t.max_steps
    if total is None and steps_per_epoch is not None and t.epochs is not None:
        total = steps_per_epoch * t.epochs
    sched = t.scheduler
    warmup = sched.warmup_steps
    if warmup is None and sched.warmup_ratio is not None and total is not None:
        warmup = math.ceil(total * sched.warmup_ratio)
    return steps_per_epoch, total, warmup


def full_steps(rows: int, world: int, micro_batch: int, accumulation: int) -> int:
    """Optimizer steps an epoch of ``rows`` gives a launcher that drops the partial batch
    (``LauncherFacts.drops_partial_batch``): each of ``world`` ranks reads ``ceil(rows /
    world)`` rows (the distributed sampler pads to equal shares), in whole micro batches,
    and steps after every ``accumulation`` of them. 0 when the rows fill no global batch."""
    per_rank = -(-rows // world)
    return per_rank // micro_batch // accumulation


def train_examples(spec: FineTuneSpec) -> int | None:
    """The training rows the spec declares (``num_examples``; a mixture's when every
    dataset declares one), else None."""
    d = spec.data
    if d.train is not None:
        return d.train.num_examples
    if d.mixture is not None:
        sizes = [ds.num_examples for ds in d.mixture.datasets]
        if all(s is not None for s in sizes):
            return sum(s for s in sizes if s is not None)
    return None
