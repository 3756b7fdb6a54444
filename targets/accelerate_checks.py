"""What the accelerate target (and its default entrypoint) cannot express."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.ir import Job
from ftspec.spec.model.data import Dataset
from ftspec.spec.model.method import LORA_FAMILY
from ftspec.spec.urls import is_uri, scheme
from ftspec.targets.accelerate_config import DEEPSPEED_KEYS, FSDP_KEYS
from ftspec.targets.accelerate_data import is_chat

_FINDINGS = Findings("target.accelerate")
_err = _FINDINGS.error
_warn = _FINDINGS.warning


def check(job: Job) -> list[Diagnostic]:
    return list(_check(job))


def _loaders(job: Job) -> Iterator[Diagnostic]:
    """The entrypoint reads JSON/JSONL and Parquet files and hub datasets (by the hub's own
    layout); a Parquet file by its ``.parquet`` name (``datasets``' parquet builder)."""
    from ftspec.spec.catalog.loaders import detect
    from ftspec.spec.rules.data import datasets

    for path, ds in datasets(job.spec):
        hub = scheme(ds.uri) == "hf"
        name = ds.loader or (None if hub else detect(ds.uri))
        if name == "parquet" and not hub and not ds.uri.endswith(".parquet"):
            yield _err((*path, "uri"), "the accelerate entrypoint reads a Parquet file by "
                       "its .parquet name", "loader", hint="name the file *.parquet "
                       "(uncompressed: Parquet compresses inside)")
        elif name not in (None, "json", "parquet"):
            yield _err((*path, "loader" if ds.loader else "uri"), f"the accelerate "
                       f"entrypoint reads JSON/JSONL and Parquet files and hub datasets, "
                       f"not {name}", "loader", hint="convert the data to JSON Lines")
        elif hub and ds.loader is not None:
            yield _warn((*path, "loader"), "the accelerate entrypoint loads hub datasets by "
                        "the hub's own layout; loader is ignored", "loader",
                        hint="remove loader")


def _resume(job: Job) -> Iterator[Diagnostic]:
    """``Trainer.train(resume_from_checkpoint=...)`` reads a folder where the launcher runs;
    nothing fetches a checkpoint from hf:// or s3:// there (the initializers fetch the model
    and the data only)."""
    resume = job.spec.training.checkpointing.resume_from
    if resume is not None and is_uri(resume) and scheme(resume) not in ("file", "pvc"):
        yield _err(("training", "checkpointing", "resume_from"), f"the Trainer resumes from "
                   f"a checkpoint folder where it runs; nothing fetches {scheme(resume)}:// "
                   "checkpoints", "resume-scheme",
                   hint="give a file:// or pvc:// URI, or a path on the machine that runs "
                   "the launcher")


def fp16_on_cpu(job: Job, findings: Findings) -> Iterator[Diagnostic]:
    """fp16 autocast (mixed, or autocast over fp16 weights) asked of a CPU run. accelerate
    enables native AMP and builds the GradScaler only off CPU (``Accelerator.__init__``:
    ``mixed_precision == "fp16" and self.device.type != "cpu"``), and transformers' Trainer
    leaves autocast to accelerate, so the run computes every op in the weights' dtype,
    without a word. bf16 autocast does run on CPU (``use_cpu`` is compiled for it)."""
    m = job.spec.model
    if job.device == "cpu" and m.dtype == "fp16" and m.autocasts:
        computes = "fp32" if m.precision_mode == "mixed" else "fp16"
        yield findings.warning(("model", "dtype"), "on CPU, accelerate runs no fp16 autocast "
                               "(it enables autocast and the GradScaler for fp16 only on an "
                               f"accelerator): this run computes every op in {computes}, "
                               "unscaled", "fp16-cpu",
                               hint="use dtype: bf16 (CPU autocast runs in bf16), or run on "
                               "GPUs (resources.gpus_per_node)")


def process_per_gpu(job: Job, findings: Findings) -> Iterator[Diagnostic]:
    """The HF Trainer under ``accelerate launch`` trains one GPU per process. Fewer
    processes than GPUs on a node: with one, that process sees every GPU and the Trainer
    (``n_gpu > 1`` outside distributed mode) wraps the model in ``nn.DataParallel``, so each
    step trains on the GPU count times the batch ftspec computes; with more than one, the
    GPUs past the process count stay idle. Either way not the run the spec describes."""
    r = job.spec.resources
    n, gpus = r.processes_per_node, job.gpus_per_node
    if n is None or gpus <= 1 or n >= gpus:
        return
    why = (f"one process sees all {gpus} GPUs and the HF Trainer wraps the model in "
           f"nn.DataParallel, which splits {gpus} micro batches over them: each forward "
           f"pass takes {gpus * job.micro_batch_size} rows, not micro_batch_size "
           f"{job.micro_batch_size}"
           if n == 1 else f"{n} processes train on {n} of the {gpus} GPUs; {gpus - n} stay "
           "idle")
    yield findings.error(("resources", "processes_per_node"), f"processes_per_node {n} on "
                         f"{gpus} GPUs per node: {why}", "process-per-gpu",
                         hint="remove processes_per_node (one process per GPU), or ask "
                         f"for {n} GPU{'s' if n > 1 else ''} per node")


def _check(job: Job) -> Iterator[Diagnostic]:
    from ftspec.targets import accelerate_ep, accelerate_tokens
    from ftspec.targets.chat_format import check_system_prompt

    yield from _loaders(job)
    yield from fp16_on_cpu(job, _FINDINGS)
    yield from process_per_gpu(job, _FINDINGS)
    yield from _resume(job)
    yield from accelerate_tokens.check(job)
    yield from check_system_prompt(job, _FINDINGS)
    yield from accelerate_ep.check(job)
    from ftspec.targets import accelerate_trainable

    yield from accelerate_trainable.check(job)
    spec = job.spec
    fsdp = spec.distributed.fsdp
    if job.strategy == "fsdp" and fsdp is not None and fsdp.version == 2 \
            and not accelerate_ep.expert_parallel(job) \
            and fsdp.sharding not in ("full_shard", "shard_grad_op"):
        yield _err(("distributed", "fsdp", "sharding"), f"accelerate's FSDP2 config reshards or "
                   f"not (full_shard / shard_grad_op); {fsdp.sharding} needs FSDP1",
                   "fsdp2-sharding", hint="use version: 1, or full_shard")
    if spec.training.max_steps_per_epoch is not None:
        yield _err(("training", "max_steps_per_epoch"), "max_steps_per_epoch is torchtune's; "
                   "accelerate entrypoints stop by epochs or max_steps", "max-steps-per-epoch",
                   hint="use training.max_steps")
    for key in spec.overrides.accelerate:
        if key in ("fsdp_config", "deepspeed_config"):
            allowed = FSDP_KEYS if key == "fsdp_config" else DEEPSPEED_KEYS
            value = spec.overrides.accelerate[key]
            bad = sorted(set(value) - allowed) if isinstance(value, dict) else ["(not a map)"]
            if bad:
                yield _err(("overrides", "accelerate", key), f"unknown {key} keys {bad} "
                           "(accelerate ignores them silently)", "nested-keys")
    from ftspec.targets.accelerate import uses_default_entrypoint

    if uses_default_entrypoint(job):
        yield from _default_entrypoint(job)


def _default_entrypoint(job: Job) -> Iterator[Diagnostic]:
    """TRL's SFTTrainer (``trl sft`` or ftspec's preparation entrypoint): text causal-LM SFT."""
    spec = job.spec
    t = spec.training
    hint = "set entrypoint.module or entrypoint.script to your own training program"
    from ftspec.targets.accelerate_vision import check_vision, multimodal

    if spec.model.auto_class not in ("AutoModelForCausalLM", "AutoModelForVision2Seq") or (
            spec.model.auto_class == "AutoModelForVision2Seq" and not multimodal(job)):
        yield _err(("model", "auto_class"), "the default entrypoint trains causal language "
                   "models (AutoModelForCausalLM) and, on multimodal data, vision-language "
                   f"models (AutoModelForVision2Seq); not {spec.model.auto_class} here",
                   "entrypoint-model", hint=hint)
    yield from check_vision(job)
    if spec.method.task_type != "CAUSAL_LM":
        yield _err(("method", "task_type"), "the default entrypoint trains causal language "
                   f"models (task_type CAUSAL_LM), not {spec.method.task_type}",
                   "entrypoint-model", hint=hint)
    lora = spec.method.lora
    if lora is not None and lora.output and spec.method.kind in LORA_FAMILY:
        yield _err(("method", "lora", "output"), "TRL's SFTTrainer refuses a LoRA adapter on "
                   "lm_head (it computes the log-probabilities from lm_head.weight directly, so "
                   "the adapter would never train)", "lora-output",
                   hint="set method.lora.output: false, or use launcher: torchtune")
    q = spec.method.quantization
    if spec.method.kind == "qlora" and q is not None and q.quant_type == "gptq":
        yield _err(("method", "quantization", "quant_type"), "qlora quantizes with "
                   "bitsandbytes (nf4 / fp4); a GPTQ model is method.kind gptq_lora",
                   "entrypoint-gptq")
    if spec.method.kind == "gptq_lora" and job.device == "cpu":
        yield _err(("method", "kind"), "GPTQ-LoRA trains through GPTQ kernels that need a "
                   "CUDA GPU (the seed's triton_v2 and fused-LoRA kernels; transformers' GPTQ "
                   "loader refuses a machine without one unless gptqmodel's slow CPU kernels "
                   "are installed, which would not be the same run)", "gptq-cpu",
                   hint="give resources.gpus_per_node and resources.accelerator, or use "
                   "method.kind: lora on the unquantized model")
    datasets = [("train",), *[("mixture", "datasets", i) for i in range(
        len(spec.data.mixture.datasets) if spec.data.mixture else 0)], ("validation",)]
    for where in datasets:
        ds = _dataset(job, where)
        if ds is None:
            continue
        path = ("data", *where)
        has_prompt = ds.prompt_template is not None or ds.prompt_func is not None
        has_completion = ds.completion_template is not None or ds.completion_func is not None
        if ds.format == "completion" and has_prompt != has_completion:
            yield _err(path, "completion data needs both a prompt and a completion "
                       "(prompt_template or prompt_func, completion_template or "
                       "completion_func), or neither: then the rows' own prompt / completion "
                       "columns are read", "entrypoint-templates")
        if is_chat(ds):
            yield from _chat(job, path, ds.format != "instruct")
    yield from _mixed_chat(job)
    es = t.early_stopping
    if es is not None and es.metric != "eval_loss":
        yield _err(("training", "early_stopping", "metric"), f"the default entrypoint "
                   f"computes eval_loss only, not {es.metric}", "entrypoint-metric",
                   hint="use metric: eval_loss")
    if "jsonl" in t.logging.report_to:
        yield _warn(("training", "logging", "report_to"), "the Hugging Face trainer has no "
                    "jsonl sink; its records go to the log (the other sinks are honoured)",
                    "entrypoint-report-to")
    if spec.model.device_map is not None:
        yield _warn(("model", "device_map"), "accelerate places the model; device_map is "
                    "ignored", "entrypoint-device-map")
    if t.loss != "cross_entropy":
        yield _warn(("training", "loss"), "the default entrypoint computes the model's "
                    "cross-entropy; chunked_cross_entropy is torchtune's", "entrypoint-loss")


def _chat(job: Job, path: tuple[str | int, ...], chat_format: bool) -> Iterator[Diagnostic]:
    """Chat tokens: torchtune's layout reproduced, or TRL's Jinja path where torchtune cannot
    run the template; anything else would train on other tokens than launcher: torchtune."""
    from ftspec.targets.chat_format import template_kind, torchtune_layout, torchtune_runs_chat

    template = job.spec.model.chat_template
    if torchtune_layout(job) is None and torchtune_runs_chat(job):
        at = ("model", "chat_template") if template is not None else (
            (*path, "format") if chat_format else (*path, "as_chat"))
        yield _err(at, "chat rows would not become the same tokens as under launcher: "
                   f"torchtune: its {job.model.display} tokenizer lays messages out with its "
                   "own special tokens, which the accelerate entrypoint does not reproduce "
                   "(it reproduces torchtune's llama2, mistral and chatml layouts on Llama 2 "
                   "and Mistral sentencepiece tokenizers)", "token-identity",
                   hint="give model.chat_template as a Jinja template or file (torchtune "
                   "refuses those, so TRL's rendering is the only one), or use launcher: "
                   "torchtune")
    if template_kind(template) == "own" and torchtune_layout(job) is None:
        yield _warn((*path, "format"), "chat data is rendered with the tokenizer's chat "
                    "template; the run fails if the tokenizer has none",
                    "entrypoint-chat-template", hint="set model.chat_template")


def _mixed_chat(job: Job) -> Iterator[Diagnostic]:
    m = job.spec.data.mixture
    if m is None:
        return
    chat = {is_chat(ds) for ds in m.datasets}
    if len(chat) > 1:
        yield _err(("data", "mixture", "datasets"), "the accelerate entrypoint hands TRL one "
                   "row shape: chat datasets (messages or token ids) cannot be mixed with "
                   "prompt / completion ones", "mixed-chat",
                   hint="mix chat with chat only, or render the other data as conversations")


def _dataset(job: Job, where: tuple[str | int, ...]) -> Dataset | None:
    d = job.spec.data
    if where == ("train",):
        return d.train
    if where == ("validation",):
        return d.validation
    return d.mixture.datasets[int(where[2])] if d.mixture else None
