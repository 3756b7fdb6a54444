"""Combinations that cannot work: method x launcher x target x strategy."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.catalog.models import MODEL_FAMILIES, torchtune_alternative
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.model.method import LORA_FAMILY
from ftspec.spec.rules._diag import error, warning

TORCHTUNE_METHODS = frozenset({"full", "lora", "qlora", "dora"})


def family_or_architecture(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    m = spec.model
    if m.family is None and m.architecture is None:
        yield error(("model",), "give model.family (a known model) or model.architecture",
                    "model-family", hint="see `ftspec explain --families` for known families")
    elif m.family is not None and m.architecture is not None:
        yield error(("model", "architecture"),
                    "give model.family or model.architecture, not both", "model-both")


def strategy_settings(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    d = spec.distributed
    world = spec.resources.world_size
    for section in ("fsdp", "deepspeed"):
        if getattr(d, section) is not None and d.strategy != section:
            yield error(("distributed", section),
                        f"{section} settings given but distributed.strategy is {d.strategy}",
                        "strategy-settings", hint=f"set distributed.strategy: {section}")
    if d.ddp is not None and d.strategy not in ("ddp", "auto"):
        yield error(("distributed", "ddp"),
                    f"ddp settings given but distributed.strategy is {d.strategy}",
                    "strategy-settings")
    if d.strategy in ("ddp", "fsdp", "deepspeed") and world == 1:
        yield warning(("distributed", "strategy"),
                      f"strategy {d.strategy} on a single process has nothing to distribute",
                      "strategy-single")
    if d.strategy == "none" and world > 1:
        yield error(("distributed", "strategy"),
                    f"strategy none cannot run {world} processes", "strategy-none",
                    hint="use auto, ddp or fsdp")
    fsdp = d.fsdp
    if fsdp is not None and fsdp.sharding.startswith("hybrid") and spec.resources.nodes == 1:
        yield warning(("distributed", "fsdp", "sharding"),
                      f"{fsdp.sharding} shards within a node and replicates across nodes; "
                      f"on one node PyTorch runs it as "
                      f"{'shard_grad_op' if fsdp.sharding.endswith('zero2') else 'full_shard'}",
                      "hybrid-single-node", hint="say full_shard (or shard_grad_op)")


def launcher_supports_spec(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    if spec.launcher != "torchtune":
        return
    kind = spec.method.kind
    if kind not in TORCHTUNE_METHODS:
        yield error(("method", "kind"),
                    f"the torchtune launcher has no recipe for {kind}",
                    "launcher-method", hint="use launcher: accelerate")
    if spec.distributed.strategy == "deepspeed":
        yield error(("distributed", "strategy"),
                    "the torchtune launcher does not support DeepSpeed (it shards with FSDP2)",
                    "launcher-deepspeed", hint="use strategy: fsdp, or launcher: accelerate")
    family = MODEL_FAMILIES.get(spec.model.family or "")
    if family is not None and family.torchtune is None:
        yield error(("model", "family"),
                    f"torchtune ships no config for {family.display}",
                    "launcher-family", hint=torchtune_alternative(family))
    a = spec.model.architecture
    if a is not None and a.base is None:
        yield error(("model", "architecture"),
                    "torchtune builds custom dimensions only on a llama2 or llama3_2 base "
                    "(model.architecture.base)", "launcher-architecture",
                    hint=torchtune_alternative(a.as_family()))
    if spec.overrides.accelerate or spec.overrides.training_args:
        yield warning(("overrides",),
                      "overrides for accelerate are ignored by the torchtune launcher",
                      "overrides-unused")


def target_supports_spec(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    target = spec.deploy.target
    r = spec.resources
    if target == "local" and r.nodes > 1:
        yield error(("resources", "nodes"),
                    f"deploy.target local runs on this machine; it cannot use {r.nodes} nodes",
                    "local-nodes")
    if target != "local":
        for path, uri in spec.uris():
            if not uri.startswith("file://"):
                continue
            if target == "ray" and uri.startswith("file:///"):
                # A Ray cluster may share this filesystem (a head on this machine, NFS).
                yield warning(path, f"the Ray job reads {uri} on the node that runs it",
                              "ray-file-uri",
                              hint="the path must exist there; else use hf:// or s3://")
                continue
            hint = ("use an absolute file:///path that exists on the Ray nodes, or hf://, "
                    "s3://" if target == "ray" else "use hf://, s3:// or pvc://")
            yield error(path, f"deploy.target {target} cannot read local files ({uri})",
                        "remote-file-uri", hint=hint)
    if target == "kubeflow":
        kf = spec.deploy.kubeflow
        if (spec.launcher == "torchtune" and spec.method.kind in LORA_FAMILY and r.nodes > 1
                and not kf.generate_runtime):
            yield error(("resources", "nodes"),
                        "Kubeflow's torchtune runtimes run LoRA on one node only "
                        f"(nodes is {r.nodes})",
                        "kubeflow-lora-nodes", hint="use nodes: 1, or method.kind: full")
        if spec.launcher == "accelerate" and not kf.generate_runtime and kf.runtime is None:
            yield error(("deploy", "target"),
                        "the accelerate launcher on kubeflow needs a runtime that runs "
                        "accelerate; Kubeflow's shipped runtimes run torchtune",
                        "kubeflow-accelerate-runtime",
                        hint="set deploy.kubeflow.generate_runtime: true, or name a runtime")
        if kf.active_deadline_seconds is not None and kf.trainer_version == "v2.1":
            yield error(("deploy", "kubeflow", "active_deadline_seconds"),
                        "activeDeadlineSeconds needs Kubeflow Trainer v2.2 or newer",
                        "kubeflow-deadline-version")


