"""The accelerate launcher's field contract: spec fields its TRL run cannot express."""

from __future__ import annotations

from ftspec.spec.ir import Job
from ftspec.spec.urls import scheme
from ftspec.targets.accelerate_ep import expert_parallel
from ftspec.targets.gap import ERROR as _E
from ftspec.targets.gap import WARNING as _W
from ftspec.targets.gap import Gap

_EP_FSDP = ("under expert parallelism transformers shards the model while loading it, by the "
            "model's own FSDP2 plan; accelerate's {} does not apply")
_EP_FSDP_KNOBS = {
    "auto_wrap": "wrap policy", "transformer_layer_cls": "wrapped class",
    "min_num_params": "size-based wrapping", "reshard_after_forward": "resharding switch",
    "sync_module_states": "weight broadcast (each process loads its own shard)",
    "cpu_ram_efficient_loading": "loading switch (each process loads its own shard)",
    "state_dict_type": "checkpoint layout (the Trainer saves the gathered weights)",
}


def _hf_tokenized(job: Job) -> bool:
    """The accelerate launcher's rows go through the Hugging Face tokenizer (instruct and
    alpaca rows of a model torchtune has a tokenizer for take torchtune's, special tokens
    file included: ``accelerate_tokens``)."""
    from ftspec.targets.accelerate_tokens import torchtune_tokenized

    return not torchtune_tokenized(job)


def _fsdp_version(job: Job) -> int:
    fsdp = job.spec.distributed.fsdp
    return fsdp.version if fsdp is not None else 2


GAPS: tuple[Gap, ...] = (
    *(Gap(("distributed", "fsdp", key), _W, _EP_FSDP.format(what), when=expert_parallel)
      for key, what in _EP_FSDP_KNOBS.items()),
    Gap(("distributed", "ddp"), _W, "the accelerate target leaves DDP's settings at "
        "PyTorch's defaults (backend, bucket size, unused parameters, timeout)"),
    Gap(("model", "architecture"), _W, "accelerate loads the model's own config.json "
        "from model.uri; model.architecture only feeds the memory estimate"),
    Gap(("model", "tokenizer", "special_tokens_uri"), _W, "special_tokens_uri is for "
        "torchtune's Llama 3 tokenizers: these rows are tokenized by the Hugging Face "
        "tokenizer, which has its own", when=_hf_tokenized),
    Gap(("distributed", "fsdp", "backward_prefetch"), _W, "FSDP2 has no backward "
        "prefetch setting", when=lambda job: _fsdp_version(job) == 2),
    Gap(("distributed", "fsdp", "forward_prefetch"), _W, "FSDP2 has no forward "
        "prefetch setting", when=lambda job: _fsdp_version(job) == 2),
    Gap(("distributed", "fsdp", "use_orig_params"), _W, "FSDP2 always keeps the "
        "original parameters", when=lambda job: _fsdp_version(job) == 2),
    Gap(("distributed", "fsdp", "sync_module_states"), _W, "accelerate syncs module "
        "states whenever cpu_ram_efficient_loading is on",
        when=lambda job: not expert_parallel(job)
        and job.spec.distributed.fsdp is not None
        and job.spec.distributed.fsdp.cpu_ram_efficient_loading),
    Gap(("data", "train", "loader"), _E, "the accelerate entrypoint reads JSON/JSONL "
        "and Parquet files and hub datasets", "convert the data to JSON Lines",
        when=lambda job: job.spec.data.train is not None
        and job.spec.data.train.loader not in (None, "json", "parquet")),
    Gap(("data", "train", "loader"), _W, "the accelerate entrypoint loads hub "
        "datasets by the hub's own layout", "remove loader",
        when=lambda job: job.spec.data.train is not None
        and scheme(job.spec.data.train.uri) == "hf"
        and job.spec.data.train.loader == "json"),
    Gap(("data", "validation", "loader"), _W, "the accelerate entrypoint loads hub "
        "datasets by the hub's own layout", "remove loader",
        when=lambda job: job.spec.data.validation is not None
        and scheme(job.spec.data.validation.uri) == "hf"
        and job.spec.data.validation.loader == "json"),
    Gap(("data", "validation", "loader"), _E, "the accelerate entrypoint reads JSON/JSONL "
        "and Parquet files and hub datasets", "convert the data to JSON Lines",
        when=lambda job: job.spec.data.validation is not None
        and job.spec.data.validation.loader not in (None, "json", "parquet")),
    Gap(("model", "use_cache"), _W, "the entrypoint turns the KV cache off for "
        "training"),
    Gap(("output", "merge_adapter"), _E, "the accelerate entrypoint saves the adapter; "
        "it does not merge it into the base model", "merge after training"),
    Gap(("output", "push_to_hub"), _E, "the accelerate entrypoint does not upload to "
        "the Hub", "upload the output folder afterwards"),
    Gap(("output", "save_adapter_only"), _E, "the accelerate entrypoint saves the "
        "adapter only", "keep save_adapter_only: true",
        when=lambda job: job.spec.method.kind != "full"),  # full: the whole model is saved
    Gap(("training", "logging", "strategy"), _W, "the accelerate entrypoint logs every "
        "training.logging.steps steps"),
)
