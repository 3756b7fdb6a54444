"""distributed.expert_parallel on the accelerate launcher: transformers' DistributedConfig in
sft.yaml (read back by TRL's parser and built by transformers), accelerate only starting the
processes, and what a model sharded at load time cannot do refused at its field."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from ftspec.compiler.dispatch import check_job
from ftspec.spec.diagnostics import Severity, format_path
from ftspec.targets.accelerate import config_text, sft_files
from helpers.jobs import make_job
from helpers.trl_parse import trl_reads

MOE: dict[str, Any] = {
    "model": {"uri": "hf://mistralai/Mixtral-8x7B-v0.1", "family": "mixtral-8x7b"},
    "method": {"kind": "full", "lora": None},
    "training": {"global_batch_size": 16, "micro_batch_size": 2},
    "resources": {"nodes": 1, "gpus_per_node": 8, "accelerator": "nvidia-h100-80gb"},
    "launcher": "accelerate", "deploy": {"target": "local"},
}


def moe(ep: int = 4, **change: Any) -> Any:
    from helpers.jobs import merge

    spec = merge(MOE, {"distributed": {"expert_parallel": ep}})
    return make_job(allow_errors=True, **merge(spec, change))


def test_expert_parallel_reaches_sft_yaml_as_transformers_reads_it() -> None:
    from transformers.distributed import DistributedConfig

    job = moe(training={"gradient_checkpointing": True})
    assert job.strategy == "fsdp"  # auto: transformers shards the dense weights with FSDP2
    _, args, _, raw = trl_reads(sft_files(job)["sft.yaml"])
    assert raw["model_init_kwargs"] == {"distributed_config": {"ep_size": 4, "fsdp_size": 8}}
    assert args.model_init_kwargs == raw["model_init_kwargs"]
    built = DistributedConfig.from_dict(args.model_init_kwargs["distributed_config"])
    # experts split 4 ways, each split FSDP-sharded over 2 processes; no tensor parallelism
    assert (built.ep_size, built.efsdp_size, built.tp_size, built.dp_size) == (4, 2, 1, 8)
    assert args.save_only_model  # the Trainer refuses other saves of a model sharded at load
    assert args.gradient_checkpointing  # the model's: accelerate does not wrap it
    accelerate = yaml.safe_load(config_text(job))
    assert accelerate["distributed_type"] == "MULTI_GPU" and "fsdp_config" not in accelerate


def test_without_expert_parallel_accelerate_shards() -> None:
    job = moe(1, distributed={"strategy": "fsdp"}, training={"gradient_checkpointing": True})
    _, args, _, raw = trl_reads(sft_files(job)["sft.yaml"])
    assert "model_init_kwargs" not in raw and not args.save_only_model
    accelerate = yaml.safe_load(config_text(job))
    assert accelerate["distributed_type"] == "FSDP"
    assert accelerate["fsdp_config"]["fsdp_activation_checkpointing"] is True


def test_cpu_offload_is_transformers_fsdp_offload() -> None:
    job = moe(distributed={"strategy": "fsdp", "fsdp": {"cpu_offload": True}})
    _, _, _, raw = trl_reads(sft_files(job)["sft.yaml"])
    assert raw["model_init_kwargs"]["distributed_config"]["fsdp_cpu_offload"] is True


CHECKS: list[tuple[str, dict[str, Any], str, str, Severity]] = [
    ("ddp", {"distributed": {"strategy": "ddp"}}, "target.accelerate.ep-strategy",
     "distributed.strategy", Severity.ERROR),
    ("deepspeed", {"distributed": {"strategy": "deepspeed"}}, "target.accelerate.ep-strategy",
     "distributed.strategy", Severity.ERROR),
    ("fsdp1", {"distributed": {"strategy": "fsdp", "fsdp": {"version": 1}}},
     "target.accelerate.ep-fsdp-version", "distributed.fsdp.version", Severity.ERROR),
    ("shard-grad-op",
     {"distributed": {"strategy": "fsdp", "fsdp": {"sharding": "shard_grad_op"}}},
     "target.accelerate.ep-sharding", "distributed.fsdp.sharding", Severity.ERROR),
    ("lora", {"method": {"kind": "lora", "lora": {"rank": 8}}}, "target.accelerate.ep-method",
     "method.kind", Severity.ERROR),
    ("resume", {"training": {"checkpointing": {"resume_from": "/ckpt/checkpoint-10"}}},
     "target.accelerate.ep-resume", "training.checkpointing.resume_from", Severity.ERROR),
    ("checkpoints", {"training": {"checkpointing": {"strategy": "steps", "steps": 10}}},
     "target.accelerate.ep-checkpoints", "training.checkpointing.strategy", Severity.WARNING),
    ("cpu-offload-on-cpu", {"resources": {"gpus_per_node": 0, "processes_per_node": 4,
                                          "accelerator": None},
                            "model": {"dtype": "fp32"},
                            "distributed": {"strategy": "fsdp", "fsdp": {"cpu_offload": True}}},
     "target.accelerate.ep-cpu-offload", "distributed.fsdp.cpu_offload", Severity.ERROR),
    ("wrap-policy", {"distributed": {"strategy": "fsdp", "fsdp": {"auto_wrap": "size"}}},
     "contract.accelerate", "distributed.fsdp.auto_wrap", Severity.WARNING),
]


@pytest.mark.parametrize(("change", "code", "path", "severity"), [c[1:] for c in CHECKS],
                         ids=[c[0] for c in CHECKS])
def test_what_a_model_sharded_at_load_cannot_do_is_diagnosed(
        change: dict[str, Any], code: str, path: str, severity: Severity) -> None:
    def found(job: Any) -> list[tuple[str | None, str, Severity]]:
        return [(d.code, format_path(d.path), d.severity) for d in check_job(job, "accelerate")]

    assert (code, path, severity) in found(moe(**change))
    assert (code, path, severity) not in found(moe(1, **change))  # only expert parallelism


def test_a_clean_expert_parallel_spec_has_no_errors() -> None:
    job = moe(training={"checkpointing": {"strategy": "no"}})
    assert [d.format() for d in check_job(job, "accelerate") if d.severity is Severity.ERROR
            ] == []


def test_memory_estimate_is_the_sharding_that_runs() -> None:
    """EP groups x FSDP2 over all 8 processes: every parameter, experts included, is split
    8 ways, as full_shard FSDP splits it without expert parallelism."""
    ep = moe(4).memory
    fsdp = moe(1, distributed={"strategy": "fsdp"}).memory
    assert (ep.weights_gib, ep.gradients_gib, ep.optimizer_gib) == \
        (fsdp.weights_gib, fsdp.gradients_gib, fsdp.optimizer_gib)
    assert any("expert parallel" in note for note in ep.notes)
