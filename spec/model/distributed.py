"""``distributed``: how the model and data are spread over devices."""

from __future__ import annotations

from typing import Literal

from ftspec.spec.model.base import SpecModel
from pydantic import Field


class Fsdp(SpecModel):
    version: Literal[1, 2] = Field(default=2, description="FSDP API version (2 = per-parameter).")
    sharding: Literal[
        "full_shard", "shard_grad_op", "hybrid_shard", "hybrid_shard_zero2", "no_shard"
    ] = Field(default="full_shard", description="What is sharded, and across which devices.")
    cpu_offload: bool = Field(default=False, description="Offload parameters to CPU.")
    state_dict_type: Literal["full", "sharded"] = Field(
        default="sharded", description="Checkpoint layout."
    )
    auto_wrap: Literal["transformer", "size", "none"] = Field(
        default="transformer", description="Wrap policy."
    )
    transformer_layer_cls: str | None = Field(
        default=None, description="Layer class to wrap; defaults to the model family's."
    )
    min_num_params: int = Field(default=100_000_000, ge=1, description="Size wrap threshold.")
    backward_prefetch: Literal["backward_pre", "backward_post", "none"] = Field(
        default="backward_pre", description="Prefetch in backward (FSDP1)."
    )
    forward_prefetch: bool = Field(default=False, description="Prefetch in forward (FSDP1).")
    use_orig_params: bool = Field(default=True, description="Keep original parameters (FSDP1).")
    sync_module_states: bool = Field(default=True, description="Broadcast rank 0's weights.")
    cpu_ram_efficient_loading: bool = Field(
        default=True, description="Only rank 0 loads weights into CPU memory."
    )
    reshard_after_forward: bool = Field(
        default=True, description="Free gathered weights after forward (FSDP2)."
    )


class DeepSpeed(SpecModel):
    stage: Literal[0, 1, 2, 3] = Field(default=2, description="ZeRO stage.")
    offload_optimizer: Literal["none", "cpu", "nvme"] = Field(
        default="none", description="Where optimizer state lives."
    )
    offload_params: Literal["none", "cpu", "nvme"] = Field(
        default="none", description="Where parameters live (stage 3)."
    )
    zero3_init: bool = Field(default=True, description="Partition weights while loading (stage 3).")


class Ddp(SpecModel):
    backend: Literal["nccl", "gloo"] | None = Field(
        default=None, description="Collective backend; nccl on GPUs, gloo on CPU when unset."
    )
    find_unused_parameters: bool = Field(default=False, description="DDP unused-parameter search.")
    bucket_cap_mb: int = Field(default=25, ge=1, description="Gradient bucket size.")
    timeout_s: int = Field(default=1800, ge=1, description="Collective timeout.")


class Distributed(SpecModel):
    strategy: Literal["auto", "none", "ddp", "fsdp", "deepspeed"] = Field(
        default="auto",
        description="auto: none on one device, ddp on several (fsdp under torchtune or "
        "expert parallelism). fsdp/deepspeed shard state.",
    )
    fsdp: Fsdp | None = Field(default=None, description="FSDP settings (strategy fsdp).")
    deepspeed: DeepSpeed | None = Field(
        default=None, description="DeepSpeed settings (strategy deepspeed)."
    )
    ddp: Ddp | None = Field(default=None, description="DDP settings.")
    expert_parallel: int = Field(
        default=1,
        ge=1,
        description="Expert-parallel degree for MoE models: each group of this many "
        "processes splits every MoE layer's experts (accelerate launcher: transformers' "
        "DistributedConfig ep_size, with FSDP2 over all processes). The process count must "
        "be divisible by it.",
    )
