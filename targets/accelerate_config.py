"""The accelerate config file (``accelerate launch --config_file``) for a Job.

``distributed_type``: ``'NO'`` for one process (quoted: bare NO is YAML 1.1 false), ``FSDP`` /
``DEEPSPEED`` for those strategies, else ``MULTI_GPU`` (also under expert parallelism, where
transformers shards the model: ``accelerate_ep``). CPU jobs set ``use_cpu: true``; several
CPU processes use ``MULTI_GPU`` with ``use_cpu`` and ``ACCELERATE_USE_CPU=true`` in the
environment (torchrun workers over gloo), because ``MULTI_CPU`` needs an MPI hostfile and
otherwise starts a single process without a word.

accelerate's own loader checks only top-level keys, so the nested ``fsdp_config`` and
``deepspeed_config`` keys come from the tables below, each an ``accelerate launch`` option
(tests check that against accelerate's launch parser).
"""

from __future__ import annotations

from typing import Any

from ftspec.spec.ir import Job
from ftspec.targets.accelerate_ep import expert_parallel

MAIN_PROCESS_PORT = 29500
MIXED_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp32": "no"}
FSDP1_SHARDING = {
    "full_shard": "FULL_SHARD", "shard_grad_op": "SHARD_GRAD_OP", "no_shard": "NO_SHARD",
    "hybrid_shard": "HYBRID_SHARD", "hybrid_shard_zero2": "HYBRID_SHARD_ZERO2",
}
WRAP_POLICY = {"transformer": "TRANSFORMER_BASED_WRAP", "size": "SIZE_BASED_WRAP",
               "none": "NO_WRAP"}
PREFETCH = {"backward_pre": "BACKWARD_PRE", "backward_post": "BACKWARD_POST",
            "none": "NO_PREFETCH"}
STATE_DICT = {"full": "FULL_STATE_DICT", "sharded": "SHARDED_STATE_DICT"}

FSDP_KEYS = frozenset({
    "fsdp_version", "fsdp_auto_wrap_policy", "fsdp_transformer_layer_cls_to_wrap",
    "fsdp_min_num_params", "fsdp_backward_prefetch", "fsdp_forward_prefetch",
    "fsdp_cpu_ram_efficient_loading", "fsdp_offload_params", "fsdp_reshard_after_forward",
    "fsdp_state_dict_type", "fsdp_sync_module_states", "fsdp_use_orig_params",
    "fsdp_activation_checkpointing", "fsdp_sharding_strategy",
})
DEEPSPEED_KEYS = frozenset({
    "zero_stage", "offload_optimizer_device", "offload_param_device", "zero3_init_flag",
    "gradient_accumulation_steps", "gradient_clipping", "deepspeed_multinode_launcher",
})


def distributed_type(job: Job) -> str:
    """Under expert parallelism transformers shards the model itself (``accelerate_ep``):
    accelerate only starts the processes."""
    if job.world_size == 1:
        return "NO"
    if expert_parallel(job):
        return "MULTI_GPU"
    return {"fsdp": "FSDP", "deepspeed": "DEEPSPEED"}.get(job.strategy, "MULTI_GPU")


def uses_fsdp_checkpointing(job: Job) -> bool:
    """Activation checkpointing is accelerate's FSDP's job under FSDP (not the model's,
    twice); under expert parallelism accelerate does not wrap the model, so it stays the
    model's."""
    return (distributed_type(job) == "FSDP" and job.world_size > 1
            and job.spec.training.gradient_checkpointing)


def config_dict(job: Job) -> dict[str, Any]:
    """Every key accelerate's ``ClusterConfig.to_dict`` writes, so the file round-trips."""
    spec = job.spec
    cfg: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": distributed_type(job),
        "downcast_bf16": "no",
        "enable_cpu_affinity": False,
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": MIXED_PRECISION[spec.model.dtype]
        if spec.model.autocasts else "no",
        "num_machines": job.nodes,
        "num_processes": job.world_size,
        "rdzv_backend": "static",
        "same_network": True,
        "tpu_env": [],
        "tpu_use_cluster": False,
        "tpu_use_sudo": False,
        "use_cpu": job.device == "cpu",
    }
    if job.nodes > 1:
        cfg["main_process_port"] = MAIN_PROCESS_PORT
    if spec.training.compile:
        cfg["dynamo_config"] = {"dynamo_backend": "INDUCTOR"}
    if cfg["distributed_type"] == "FSDP":
        cfg["fsdp_config"] = fsdp_config(job)
    elif cfg["distributed_type"] == "DEEPSPEED":
        cfg["deepspeed_config"] = deepspeed_config(job)
    for key, value in spec.overrides.accelerate.items():
        cfg[str(key)] = value
    return cfg


def fsdp_config(job: Job) -> dict[str, Any]:
    from ftspec.spec.model.distributed import Fsdp

    f = job.spec.distributed.fsdp or Fsdp()
    out: dict[str, Any] = {
        "fsdp_activation_checkpointing": uses_fsdp_checkpointing(job),
        "fsdp_auto_wrap_policy": WRAP_POLICY[f.auto_wrap],
    }
    layer_cls = f.transformer_layer_cls or job.model.hf_layer_cls
    if f.auto_wrap == "transformer":
        if layer_cls:  # else accelerate wraps the model's own _no_split_modules
            out["fsdp_transformer_layer_cls_to_wrap"] = layer_cls
    elif f.auto_wrap == "size":
        out["fsdp_min_num_params"] = f.min_num_params
    out["fsdp_cpu_ram_efficient_loading"] = f.cpu_ram_efficient_loading
    out["fsdp_offload_params"] = f.cpu_offload
    out["fsdp_state_dict_type"] = STATE_DICT[f.state_dict_type]
    out["fsdp_sync_module_states"] = f.sync_module_states or f.cpu_ram_efficient_loading
    if f.version == 1:
        out["fsdp_backward_prefetch"] = PREFETCH[f.backward_prefetch]
        out["fsdp_forward_prefetch"] = f.forward_prefetch
        out["fsdp_reshard_after_forward"] = FSDP1_SHARDING[f.sharding]
        # what `accelerate launch` exports as FSDP_SHARDING_STRATEGY (FULL_SHARD when absent),
        # which FSDP1 reads before fsdp_reshard_after_forward
        out["fsdp_sharding_strategy"] = FSDP1_SHARDING[f.sharding]
        out["fsdp_use_orig_params"] = f.use_orig_params
    else:
        out["fsdp_reshard_after_forward"] = f.sharding == "full_shard" and f.reshard_after_forward
    out["fsdp_version"] = f.version
    return dict(sorted(out.items()))


def deepspeed_config(job: Job) -> dict[str, Any]:
    from ftspec.spec.model.distributed import DeepSpeed

    d = job.spec.distributed.deepspeed or DeepSpeed()
    out: dict[str, Any] = {
        "gradient_accumulation_steps": job.gradient_accumulation_steps,
        "offload_optimizer_device": d.offload_optimizer,
        "offload_param_device": d.offload_params,
        "zero_stage": d.stage,
    }
    if job.spec.training.max_grad_norm is not None:
        out["gradient_clipping"] = job.spec.training.max_grad_norm
    if d.stage == 3:
        out["zero3_init_flag"] = d.zero3_init
    if job.nodes > 1:
        out["deepspeed_multinode_launcher"] = "standard"
    return dict(sorted(out.items()))


YAML11_BOOLS = frozenset(
    w for base in ("y", "yes", "n", "no", "true", "false", "on", "off")
    for w in (base, base.upper(), base.capitalize())
)


def dump_config(cfg: dict[str, Any]) -> str:
    """YAML that accelerate's loader (PyYAML, YAML 1.1) reads back exactly: strings such as
    ``NO`` / ``no`` are quoted, since bare they would read as booleans."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False

    def represent_str(representer: Any, data: str) -> Any:
        style = "'" if data in YAML11_BOOLS else None
        return representer.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    yaml.representer.add_representer(str, represent_str)
    buf = io.StringIO()
    yaml.dump(cfg, buf)
    return buf.getvalue()
