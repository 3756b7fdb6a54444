"""Combinations that cannot work: method x strategy x where the job runs.

What a launcher or a deploy target cannot run lives with that target (``targets/``), in
one place; ``validate`` runs those checks through the one compile path."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic, format_path
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules._diag import error, warning
from ftspec.spec.urls import rest, scheme


def family_or_architecture(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    m = spec.model
    if m.family is None and m.architecture is None:
        yield error(("model",), "give model.family (a known model) or model.architecture",
                    "model-family", hint="add model.architecture with the numbers of the model's config.json "
                    "(num_layers, num_heads, num_kv_heads, embed_dim, intermediate_dim, "
                    "vocab_size, max_seq_len), or a known model.family (`ftspec explain "
                    "--families`)")
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
    if target != "local" and not _target_checks_uris(spec):
        for path, uri in spec.uris():
            if scheme(uri) != "file":
                continue
            if target == "ray" and rest(uri).startswith("/"):
                # A Ray cluster may share this filesystem (a head on this machine, NFS).
                yield warning(path, f"the Ray job reads {uri} on the node that runs it",
                              "ray-file-uri",
                              hint="the path must exist there; else use hf:// or s3://")
                continue
            yield error(path, f"deploy.target {target} cannot read local files ({uri})",
                        "remote-file-uri", hint=_remote_hint(target, path))


def _remote_hint(target: str, path: tuple[str | int, ...]) -> str:
    """What to write at ``path`` for a job that does not run on this machine."""
    if target == "ray":
        return ("use an absolute file:///path that exists on the Ray nodes"
                + (", or hf://, s3://" if path[-1] != "resume_from" else ""))
    if path == ("output", "uri"):
        return "set output.uri: pvc://CLAIM/PATH (a PersistentVolumeClaim the job mounts)"
    if path[-1] == "resume_from":
        return f"set {format_path(path)}: pvc://CLAIM/PATH"
    return f"set {format_path(path)}: hf://ORG/NAME, s3://BUCKET/PATH or pvc://CLAIM/PATH"


def _target_checks_uris(spec: FineTuneSpec) -> bool:
    """The kubeflow target's own check places each URI nothing fetches, with what to write
    there, when the job runs the launcher in a container of its own runtime (not torchtune's
    runtimes, not a TrainJob's own command): this rule stays out of the way then, so that
    `compile` lists that check's findings together with the target's other missing pieces
    instead of stopping at validation."""
    trainer = spec.overrides.trainjob.get("spec", {})
    trainer = trainer.get("trainer", {}) if isinstance(trainer, dict) else {}
    own_command = isinstance(trainer, dict) and "command" in trainer
    return spec.deploy.target == "kubeflow" and spec.launcher != "torchtune" and not own_command


def fsdp_layer_class(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    """accelerate wraps the modules whose class *name* is ``transformer_layer_cls`` (a comma
    list) and stops at start when the model has none: an import path never matches, and a
    name other than the model's decoder layer fails the run."""
    f = spec.distributed.fsdp
    if f is None or f.transformer_layer_cls is None:
        return
    at = ("distributed", "fsdp", "transformer_layer_cls")
    names = [n.strip() for n in f.transformer_layer_cls.split(",") if n.strip()]
    dotted = [n for n in names if "." in n]
    if dotted:
        short = ",".join(n.rsplit(".", 1)[-1] for n in names)
        yield error(at, f"{dotted[0]} is an import path; accelerate matches class names",
                    "fsdp-layer-path", hint=f"transformer_layer_cls: {short}")
        return
    own = _layer_class(spec)
    if own and own not in names:
        known = _model_classes(spec)
        prefix = own.removesuffix("DecoderLayer")
        missing = [n for n in names if n not in known] if known is not None else \
            [n for n in names if not (prefix and n.startswith(prefix))]
        if not missing:
            return  # a module of the model other than its decoder layer (an MoE block)
        model = spec.model.family or "this model"
        yield error(at, f"{', '.join(missing)} is not a module class of {model} (its decoder "
                    f"layer is {own}): accelerate would find nothing to wrap and stop",
                    "fsdp-layer-class", hint=f"transformer_layer_cls: {own}, or leave it "
                    "out (the model's own is used)")


_CLASS = re.compile(r"^class (\w+)\(", re.MULTILINE)


def _model_classes(spec: FineTuneSpec) -> set[str] | None:
    """The classes the installed transformers' ``modeling_<model_type>.py`` defines for a
    catalog family, read as text (importing transformers takes seconds); None when that file
    cannot be found."""
    import importlib.util
    from pathlib import Path

    from ftspec.spec.catalog.models import MODEL_FAMILIES

    family = MODEL_FAMILIES.get(spec.model.family or "")
    found = importlib.util.find_spec("transformers")
    if family is None or not family.arch or found is None or found.origin is None:
        return None
    path = Path(found.origin).parent / "models" / family.arch / f"modeling_{family.arch}.py"
    try:
        return set(_CLASS.findall(path.read_text(encoding="utf-8")))
    except OSError:
        return None


def _layer_class(spec: FineTuneSpec) -> str | None:
    from ftspec.spec.catalog.models import MODEL_FAMILIES

    m = spec.model
    if m.architecture is not None:
        return m.architecture.layer_cls
    family = MODEL_FAMILIES.get(m.family or "")
    return family.hf_layer_cls if family is not None else None
