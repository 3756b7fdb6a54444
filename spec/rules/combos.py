"""Combinations that cannot work: method x strategy x where the job runs.

What a launcher or a deploy target cannot run lives with that target (``targets/``), in
one place; ``validate`` runs those checks through the one compile path."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules._diag import error, warning


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
            fetched = "pvc://" if path[-1] == "resume_from" else "hf://, s3:// or pvc://"
            hint = ("use an absolute file:///path that exists on the Ray nodes"
                    + (", or hf://, s3://" if path[-1] != "resume_from" else "")
                    if target == "ray" else f"use {fetched}")
            yield error(path, f"deploy.target {target} cannot read local files ({uri})",
                        "remote-file-uri", hint=hint)
