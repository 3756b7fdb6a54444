"""How many processes, on what: the launch topology of a config that does not name it.

Configs of TRL, axolotl, LLaMA-Factory and Oumi leave the process count to the launcher.
The import uses, in order: ``--nproc-per-node``; a usage comment in the file itself
(``--nproc_per_node 4``, ``--num_processes 4``, ``CUDA_VISIBLE_DEVICES=0,1,2,3``); the
CPU when the source says so (``use_cpu: true``); the launcher's own convention when the
source asks for sharding (FSDP or DeepSpeed: ``accelerate launch`` / ``torchrun`` start one
process per visible GPU, so a node of :data:`ASSUMED_GPUS` GPUs is assumed); else one GPU.
Whatever was assumed rather than read is said twice: in the comment beside the value and
as a warning at the key that made the assumption. The distributed settings stay in the
spec whatever the count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ftspec.compiler.importers.base import SpecDraft
from ftspec.spec.diagnostics import KeyPath
from ftspec.spec.loader import SourceDoc

ASSUMED_GPUS = 8
"""GPUs of the node assumed when a sharded config names no count (an 8-GPU node)."""

_COUNT = re.compile(r"--(?:nproc[_-]per[_-]node|num[_-]processes)[ =](\d+)"
                    r"|CUDA_VISIBLE_DEVICES=(\d+(?:,\d+)*)")


@dataclass(frozen=True)
class Hint:
    count: int
    origin: str


def comment_count(doc: SourceDoc) -> Hint | None:
    """A process count in one of the file's comments (its usage line)."""
    for number, line in enumerate(doc.text.splitlines(), start=1):
        if "#" not in line:
            continue
        m = _COUNT.search(line[line.index("#"):])
        if m:
            count = int(m.group(1)) if m.group(1) else len(m.group(2).split(","))
            return Hint(count, f"from {doc.file}:{number} (its usage comment)")
    return None


def sharding_key(doc: SourceDoc) -> KeyPath | None:
    """The key by which the source asks for FSDP or DeepSpeed, if it does."""
    data = doc.data if isinstance(doc.data, dict) else {}
    for key in ("fsdp", "fsdp_config", "deepspeed"):
        value = data.get(key)
        if isinstance(value, dict) and "enable_fsdp" in value:  # Oumi's section
            if value.get("enable_fsdp") is True:
                return (key, "enable_fsdp")
            continue
        if value not in (None, False, "", [], {}):
            return (key,)
    return None


def resources_from_flags(draft: SpecDraft, nproc: int | None, nnodes: int | None,
                         accelerator: str, config: str, who: str,
                         given: tuple[str, str] = ("--nproc-per-node", "--nnodes")) -> int:
    """``resources`` for a config that names no topology (``who`` says what decides it);
    returns the world size. ``given``: where ``nproc`` and ``nnodes`` came from (the command
    line, or a launcher file's line)."""
    doc, res = draft.source, ("resources",)
    data = doc.data if isinstance(doc.data, dict) else {}
    hint = comment_count(doc)
    shard_at = sharding_key(doc)
    if "use_cpu" in data:
        draft.consumed.add("use_cpu")
    if nproc is None and data.get("use_cpu") is True:
        draft.put(res + ("gpus_per_node",), 0, draft.origin_of(("use_cpu",)))
        draft.put(res + ("processes_per_node",), hint.count if hint else 1,
                  hint.origin if hint else f"{draft.origin_of(('use_cpu',))}: one process")
        _nodes(draft, nnodes, given[1])
        return (hint.count if hint else 1) * (nnodes or 1)
    if nproc is not None:
        gpus, origin = nproc, given[0]
    elif hint is not None:
        gpus, origin = hint.count, hint.origin
    elif shard_at is not None:
        gpus = ASSUMED_GPUS
        origin = (f"not in {config}: {who}; {gpus} assumed, one process per GPU of a node, "
                  f"since {'.'.join(map(str, shard_at))} shards the model")
        draft.warn(shard_at, f"{config} names no process count: assumed {gpus} GPUs on one "
                   f"node (the launcher starts one process per visible GPU)",
                   hint="pass --nproc-per-node N to `ftspec import`, or edit "
                   "resources.gpus_per_node")
    else:
        gpus, origin = 1, f"not in {config}: {who}; 1 assumed"
    draft.put(res + ("gpus_per_node",), gpus, origin)
    draft.put(res + ("accelerator",), accelerator,
              f"not in {config}: the machine decides (--accelerator)")
    _nodes(draft, nnodes, given[1])
    return gpus * (nnodes or 1)


def _nodes(draft: SpecDraft, nnodes: int | None, origin: str) -> None:
    if nnodes and nnodes > 1:
        draft.put(("resources", "nodes"), nnodes, origin)
