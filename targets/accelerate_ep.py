"""Expert parallelism on the accelerate launcher: transformers' own ``DistributedConfig``.

``distributed.expert_parallel > 1`` compiles to ``model_init_kwargs.distributed_config`` in
``sft.yaml``, which both ``trl sft`` and ftspec's entrypoint hand to ``from_pretrained``:
transformers then shards the model while loading it — each group of ``ep_size`` processes
splits every MoE layer's experts (tokens reach them by all-to-all), and FSDP2 shards the
dense weights over all ``fsdp_size`` processes — and the Trainer trains that model as it is
(accelerate neither wraps nor shards it again). accelerate's config therefore only starts the
processes (``MULTI_GPU``), and its FSDP settings do not apply.

What transformers and the libraries around it refuse or cannot do with a model sharded at
load time is refused here, at the spec line (``check``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.ir import Job

_FINDINGS = Findings("target.accelerate")
_SHARDED = "transformers' expert parallelism"


def expert_parallel(job: Job) -> bool:
    return job.spec.distributed.expert_parallel > 1


def distributed_config(job: Job) -> dict[str, Any]:
    """``transformers.distributed.DistributedConfig`` fields: experts split over ``ep_size``
    processes, dense weights FSDP2-sharded over all of them (tensor parallelism off, so
    every process reads its own batch: the Job's batch arithmetic holds)."""
    out: dict[str, Any] = {"ep_size": job.spec.distributed.expert_parallel,
                           "fsdp_size": job.world_size}
    fsdp = job.spec.distributed.fsdp
    if fsdp is not None and fsdp.cpu_offload:
        out["fsdp_cpu_offload"] = True
    return out


def check(job: Job) -> Iterator[Diagnostic]:
    if not expert_parallel(job):
        return
    spec = job.spec
    err = _FINDINGS.error
    if job.strategy in ("ddp", "deepspeed"):  # none: one process, a rule refuses it
        yield err(("distributed", "strategy"), f"{_SHARDED} shards the dense weights with "
                  "FSDP2 over all processes (transformers requires ep_size to divide "
                  f"fsdp_size x tp_size); strategy {job.strategy} cannot hold it",
                  "ep-strategy", hint="use strategy: fsdp (or auto)")
    fsdp = spec.distributed.fsdp
    if fsdp is not None and fsdp.version == 1:
        yield err(("distributed", "fsdp", "version"), f"{_SHARDED} shards with FSDP2",
                  "ep-fsdp-version", hint="use version: 2")
    if fsdp is not None and fsdp.sharding != "full_shard":
        yield err(("distributed", "fsdp", "sharding"), f"{_SHARDED} is compiled with the "
                  f"dense weights fully sharded over all processes, not {fsdp.sharding}",
                  "ep-sharding", hint="use sharding: full_shard")
    if fsdp is not None and fsdp.cpu_offload and job.device == "cpu":
        yield err(("distributed", "fsdp", "cpu_offload"), "FSDP2's CPU offload policy needs "
                  "an accelerator (on CPU it fails: \"Cannot access accelerator device when "
                  "none is available\")", "ep-cpu-offload", hint="remove cpu_offload")
    if spec.method.kind != "full":
        yield err(("method", "kind"), f"{_SHARDED} runs full fine-tunes only: PEFT sizes an "
                  "adapter from the local shard of a weight transformers sharded at load time "
                  "(a LoRA adapter fails in its first forward pass with a shape mismatch)",
                  "ep-method", hint="use kind: full, or expert_parallel: 1")
    c = spec.training.checkpointing
    if c.resume_from is not None:
        yield err(("training", "checkpointing", "resume_from"), "the Trainer cannot resume a "
                  "model transformers sharded at load time: its checkpoints hold no "
                  "optimizer state", "ep-resume",
                  hint="start from the checkpoint as model.uri, or expert_parallel: 1")
    if c.strategy != "no":
        yield _FINDINGS.warning(("training", "checkpointing", "strategy"), "checkpoints of a "
                                "model transformers sharded at load time hold the gathered "
                                "weights only (save_only_model), no optimizer state: they "
                                "cannot resume the run", "ep-checkpoints")
