"""Where the training state lives: shards, offloads and expert parallelism (``Placement``).

What ``compiler/memory.py`` divides parameters, gradients and optimizer state by: FSDP's
sharding strategies, DeepSpeed's ZeRO stages (Rajbhandari et al. 2020, sec. 3.1: stages
1 / 2 / 3 = optimizer state / + gradients / + parameters), their CPU / NVMe offloads, and
expert parallelism's split of a mixture-of-experts' experts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ftspec.spec.catalog.blocks import moe_layer_count
from ftspec.spec.ir import ModelFacts
from ftspec.spec.model import FineTuneSpec


def expert_params(model: ModelFacts) -> float:
    """Parameters in the experts of a mixture-of-experts model (0 for dense models): every
    MoE layer's (all of them, or every n-th where dense layers interleave)."""
    if not model.num_experts:
        return 0.0
    mats = 3 if model.gated_mlp else 2
    layers = moe_layer_count(model.num_layers, model.moe_layer_step)
    return float(layers * model.num_experts * mats * model.hidden_size
                 * model.intermediate_size)


@dataclass(frozen=True)
class Placement:
    """How the training state is spread over devices: shard counts for parameters,
    gradients and optimizer state, what is offloaded, and the expert-parallel split."""

    params: int = 1
    grads: int = 1
    optim: int = 1
    optim_offloaded: bool = False
    params_offloaded: bool = False
    expert_parallel: int = 1
    experts: float = 0.0
    """Expert parameters split by expert parallelism (0 without it)."""
    notes: tuple[str, ...] = ()

    def per_device(self, total: float, shard: int) -> float:
        """``total`` parameters over ``shard`` devices; each device holds
        num_experts / ep of every MoE layer's experts unless sharding splits them finer."""
        if not self.experts:
            return total / shard
        return (total - self.experts) / shard + self.experts / max(shard, self.expert_parallel)


def _fsdp_placement(spec: FineTuneSpec, world_size: int, procs_per_node: int) -> Placement:
    """FSDP: full_shard / hybrid_shard shard everything, shard_grad_op / hybrid_shard_zero2
    gradients and optimizer state, over all ranks or (hybrid) one node's; cpu_offload moves
    parameters and optimizer state to the CPU."""
    fsdp = spec.distributed.fsdp
    sharding = fsdp.sharding if fsdp else "full_shard"
    group = procs_per_node if sharding.startswith("hybrid") else world_size
    params = grads = 1
    if sharding in ("full_shard", "hybrid_shard"):
        params = grads = group
    elif sharding in ("shard_grad_op", "hybrid_shard_zero2"):
        grads = group
    if fsdp is not None and fsdp.cpu_offload:
        return Placement(params, grads, grads, True, True,
                         notes=("parameters and optimizer state offloaded to CPU",))
    return Placement(params, grads, grads)


def _deepspeed_placement(spec: FineTuneSpec, world_size: int) -> Placement:
    """DeepSpeed ZeRO stages 1 / 2 / 3 shard optimizer state / + gradients / + parameters
    (Rajbhandari et al. 2020); its offloads move optimizer state, and at stage 3 parameters."""
    ds = spec.distributed.deepspeed
    stage = ds.stage if ds else 2
    notes: list[str] = []
    optim_off = ds is not None and ds.offload_optimizer != "none"
    params_off = ds is not None and stage == 3 and ds.offload_params != "none"
    if ds is not None and optim_off:
        notes.append(f"optimizer state offloaded to {ds.offload_optimizer}")
    if ds is not None and params_off:
        notes.append(f"parameters offloaded to {ds.offload_params}")
    return Placement(world_size if stage >= 3 else 1, world_size if stage >= 2 else 1,
                     world_size if stage >= 1 else 1, optim_off, params_off,
                     notes=tuple(notes))


def placement(spec: FineTuneSpec, model: ModelFacts, *, strategy: str, world_size: int,
              procs_per_node: int) -> Placement:
    """The strategy's shards and offloads, and expert parallelism's split of the experts."""
    if strategy == "fsdp":
        place = _fsdp_placement(spec, world_size, procs_per_node)
    elif strategy == "deepspeed":
        place = _deepspeed_placement(spec, world_size)
    else:
        place = Placement()
    ep = spec.distributed.expert_parallel
    experts = expert_params(model) if ep > 1 else 0.0
    if not experts:
        return place
    return Placement(place.params, place.grads, place.optim, place.optim_offloaded,
                     place.params_offloaded, ep, experts,
                     (*place.notes, f"experts split over {ep} devices (expert parallel)"))
