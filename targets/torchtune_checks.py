"""What the torchtune target cannot express, each pointing at the spec key at fault.

Errors are settings torchtune 0.6.1 would run differently from the spec (or not at all);
warnings are settings it ignores without changing the optimization. What they need from
torchtune (which configs it ships) is read from the committed snapshot
(``torchtune_snapshot``), never from the installed package: ``validate`` runs them.
"""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.ir import Job
from ftspec.targets.torchtune_defaults import TORCHTUNE_VERSION

METHODS = frozenset({"full", "lora", "qlora", "dora"})


_FINDINGS = Findings("target.torchtune")
_err = _FINDINGS.error
_warn = _FINDINGS.warning


def check(job: Job) -> list[Diagnostic]:
    return list(_check(job))


def _check(job: Job) -> Iterator[Diagnostic]:
    from ftspec.targets.chat_format import check_system_prompt
    from ftspec.targets.torchtune import HF_TO_TORCHTUNE_ATTN, MLP_MODULES

    yield from _multimodal(job)
    no_recipe = _no_recipe(job)
    if no_recipe is not None:
        yield no_recipe
        return
    yield from _strategy(job)
    yield from _builder_shape(job)
    yield from check_system_prompt(job, _FINDINGS)
    yield from _config(job)
    yield from _mixture(job)
    yield from _train_dataset(job)
    yield from _numerics(job)
    yield from _schedule(job)
    yield from _lora(job, HF_TO_TORCHTUNE_ATTN, MLP_MODULES)
    yield from _distributed(job)
    yield from _resume(job)
    yield from _ignored(job)


def _no_recipe(job: Job) -> Diagnostic | None:
    """Why torchtune has nothing to build this job from (no recipe for the method, no
    config for the model), which makes every other check moot; None when it has."""
    spec = job.spec
    kind = spec.method.kind
    if kind not in METHODS:
        return _err(("method", "kind"), f"torchtune has no recipe for {kind}", "method",
                    hint="use method.kind full, lora, qlora or dora, or launcher: accelerate")
    if job.model.torchtune_config is not None:
        return None
    if spec.model.architecture is not None:
        return _err(("model", "architecture"), "torchtune builds custom dimensions only "
                    "on a llama2 or llama3_2 base (model.architecture.base)", "architecture",
                    hint=_alternative(job))
    return _err(("model", "family"), f"torchtune {TORCHTUNE_VERSION} ships no config for "
                f"{job.model.display}{_unreleased(job)}", "family", hint=_alternative(job))


def _unreleased(job: Job) -> str:
    """Why, where torchtune's main branch builds the model and no release does."""
    from ftspec.spec.catalog.models import MODEL_FAMILIES, TORCHTUNE_UNRELEASED

    family = MODEL_FAMILIES.get(job.spec.model.family or "")
    name = TORCHTUNE_UNRELEASED.get(family.arch) if family is not None else None
    return (f" (torchtune's main branch builds {name}, but no torchtune release on PyPI "
            "does yet)") if name else ""


def _strategy(job: Job) -> Iterator[Diagnostic]:
    if job.spec.distributed.strategy == "deepspeed":
        yield _err(("distributed", "strategy"), "torchtune does not support DeepSpeed (it "
                   "shards with FSDP2)", "deepspeed", hint="set distributed.strategy: fsdp, or "
                   "launcher: accelerate")


def _config(job: Job) -> Iterator[Diagnostic]:
    """The shipped config for this method, model and topology."""
    from ftspec.targets.torchtune import base_config, config_candidates

    if base_config(job) is None:
        tried = ", ".join(n for n, _ in config_candidates(job))
        topology = "one device" if job.world_size == 1 else f"{job.world_size} processes"
        yield _err(("method", "kind"),
                   f"torchtune ships no {job.spec.method.kind} config for {job.model.display} "
                   f"on {topology} (looked for {tried})", "config",
                   hint="set resources.gpus_per_node / resources.nodes to a topology torchtune "
                   "ships this method for, or use launcher: accelerate")


def _mixture(job: Job) -> Iterator[Diagnostic]:
    data = job.spec.data
    if data.mixture is not None and data.mixture.strategy == "concatenate":
        yield _err(("data", "mixture", "strategy"), "torchtune concatenates a list of "
                   "datasets, but the torchtune target compiles one dataset section: a "
                   "concatenation is not compiled for it", "mixture",
                   hint="concatenate the files into one data.train, or use launcher: "
                   "accelerate")
    elif data.mixture is not None:
        yield _err(("data", "mixture"), "torchtune concatenates datasets; it cannot mix them "
                   "by proportion", "mixture", hint="use data.train, or launcher: accelerate")


def _train_dataset(job: Job) -> Iterator[Diagnostic]:
    """data.train's format and templates, then packing, against torchtune's builders."""
    from ftspec.targets.torchtune import DATASETS

    data = job.spec.data
    ds = data.train
    if ds is not None:
        if ds.format == "prompt_completion":
            yield _err(("data", "train", "format"), "prompt_completion is TRL's own "
                       "prompt-completion tokenization (the text tokenized at once, no prompt "
                       "template); torchtune's builders tokenize each message apart through "
                       "the tokenizer's prompt template, so the tokens would differ",
                       "dataset-format", hint="use format: instruct with column_map {input: "
                       "prompt, output: completion}: torchtune's tokens on both launchers")
        elif ds.format not in DATASETS and ds.format != "multimodal":  # (_multimodal)
            yield _err(("data", "train", "format"),
                       f"the torchtune target builds {', '.join(DATASETS)} datasets, not "
                       f"{ds.format}", "dataset-format",
                       hint=f"set data.train.format: {' / '.join(DATASETS)}, or use launcher: "
                       "accelerate")
        if ds.format == "alpaca" and ds.new_system_prompt is not None:
            yield _err(("data", "train", "new_system_prompt"), "torchtune's alpaca_dataset "
                       "takes no system prompt", "alpaca-system-prompt",
                       hint="use format: instruct with column_map, or chat")
        for field in ("prompt_template", "prompt_func", "completion_template",
                      "completion_func", "response_template"):
            if getattr(ds, field) is not None:
                yield _err(("data", "train", field), "torchtune's datasets take a column_map, "
                           "not prompt templates or functions", "dataset-template",
                           hint="use format: instruct with column_map {input: …, output: …}")
    if data.packed and data.packed_attention == "across":
        yield _err(("data", "packed_attention"), "torchtune 0.6.1's PackedDataset always "
                   "keeps packed examples apart (a block-causal mask: flex attention's "
                   "BlockMask on CUDA, a dense mask elsewhere; positions restart per example)",
                   "packed-attention", hint="use packed_attention: per_example, or launcher: "
                   "accelerate (TRL's wrapped packing)")


def _numerics(job: Job) -> Iterator[Diagnostic]:
    """model.precision and model.dtype: torchtune trains in pure bf16 or fp32 (no module of
    torchtune 0.6.1 or its recipes calls ``torch.autocast`` or a GradScaler)."""
    model = job.spec.model
    if model.precision == "mixed" and model.dtype != "fp16":
        yield _err(("model", "precision"), "torchtune's recipes train in pure precision: "
                   "weights and optimizer state live in `dtype`, with no fp32 master copy "
                   "or autocast", "precision-mixed",
                   hint="use precision: pure, or launcher: accelerate for mixed precision")
    if model.precision == "autocast" and model.dtype == "bf16":
        yield _err(("model", "precision"), "torchtune's recipes run no autocast: every op "
                   "computes in `dtype`, so softmax, norms and the loss cannot run in fp32 "
                   "as autocast runs them", "precision-autocast",
                   hint="use precision: pure (the same stored dtypes, bf16 compute), or "
                   "launcher: accelerate for autocast")
    if model.dtype == "fp16":
        yield _err(("model", "dtype"), "torchtune's recipes do not train in fp16", "fp16",
                   hint="set model.dtype: bf16 (Ampere or newer) or fp32")


def _schedule(job: Job) -> Iterator[Diagnostic]:
    """The optimizer, the learning-rate schedule and where training stops."""
    from ftspec.targets.torchtune import OPTIMIZERS, SCHEDULERS

    t = job.spec.training
    if t.optimizer.name not in OPTIMIZERS:
        yield _err(("training", "optimizer", "name"),
                   f"the torchtune target has no optimizer mapping for {t.optimizer.name}",
                   "optimizer", hint="use one of " + ", ".join(OPTIMIZERS))
    if t.scheduler.name not in SCHEDULERS:
        yield _err(("training", "scheduler", "name"),
                   f"torchtune ships only a cosine schedule with warmup, not {t.scheduler.name}",
                   "scheduler", hint="set training.scheduler.name: cosine, constant or "
                   "constant_with_warmup, or use launcher: accelerate")
    if t.scheduler.warmup_ratio is not None and job.warmup_steps is None:
        yield _err(("training", "scheduler", "warmup_ratio"),
                   "torchtune takes warm-up in steps, and the total steps are unknown",
                   "warmup-ratio", hint="add data.train.num_examples: ROWS (the training set's row "
                   "count, from which the total steps follow), or give "
                   "training.scheduler.warmup_steps instead")
    if t.max_steps is not None and job.steps_per_epoch is not None \
            and job.steps_per_epoch < t.max_steps:
        yield _err(("training", "max_steps"),
                   f"torchtune stops at the end of its epoch: {job.steps_per_epoch} steps per "
                   f"epoch < max_steps {t.max_steps}", "max-steps",
                   hint="use epochs (and max_steps_per_epoch) instead")


def _lora(job: Job, attn: dict[str, str], mlp: frozenset[str]) -> Iterator[Diagnostic]:
    lora = job.spec.method.lora
    if not job.lora_modules or lora is None:
        return
    path = ("method", "lora", "target_modules")
    unknown = [m for m in job.lora_modules if m not in attn and m not in mlp]
    if unknown:
        yield _err(path, f"torchtune cannot adapt {', '.join(unknown)}", "lora-modules",
                   hint="set method.lora.target_modules to names torchtune adapts: "
                   f"{', '.join(sorted(attn))} (attention), {', '.join(sorted(mlp))} (MLP)")
    chosen = [m for m in job.lora_modules if m in mlp]
    if chosen and len(chosen) != len(mlp):
        yield _err(path, f"torchtune adapts all MLP projections or none, not only "
                   f"{', '.join(chosen)}", "lora-mlp", hint="set method.lora.mlp: true")
    for field, moved, what in (("bias", lora.bias != "none", "bias training"),
                               ("modules_to_save", bool(lora.modules_to_save),
                                "modules_to_save (fully trained extra modules)"),
                               ("init_weights", lora.init_weights != "default",
                                "init_weights choice")):
        if moved:
            yield _err(("method", "lora", field), f"torchtune's LoRA has no {what}",
                       "lora-options", hint=f"remove method.lora.{field}, or use launcher: "
                       "accelerate")
    if lora.output and job.model.torchtune_config and job.model.torchtune_config[0] == "llama3_2":
        yield _err(("method", "lora", "output"), "Llama 3.2 ties its output projection to the "
                   "embeddings; torchtune cannot adapt it", "lora-output-tied",
                   hint="set method.lora.output: false, or use launcher: accelerate")


def _distributed(job: Job) -> Iterator[Diagnostic]:
    spec = job.spec
    if job.world_size == 1:
        return
    if job.strategy != "fsdp" and spec.distributed.strategy != "deepspeed":
        yield _err(("distributed", "strategy"), f"torchtune's distributed recipes shard with "
                   f"FSDP2; strategy {job.strategy} is not available", "strategy",
                   hint="use strategy: fsdp (or auto)")
    fsdp = spec.distributed.fsdp
    if fsdp is not None and fsdp.version == 1:
        yield _err(("distributed", "fsdp", "version"), "torchtune shards with FSDP2 only",
                   "fsdp-version", hint="use version: 2")
    if fsdp is not None and fsdp.sharding not in ("full_shard", "shard_grad_op"):
        yield _err(("distributed", "fsdp", "sharding"), f"torchtune 0.6.1's recipes support "
                   f"full_shard and shard_grad_op, not {fsdp.sharding}", "fsdp-sharding",
                   hint="use sharding: full_shard (or shard_grad_op), or launcher: accelerate")
    if job.nodes > 1 and spec.method.kind != "full" and job.target != "kubeflow":
        # On kubeflow the runtime refuses it: the kubeflow target's error says so.
        yield _warn(("resources", "nodes"), f"torchtune 0.6.1 documents multi-node training "
                    f"for full fine-tuning only; LoRA on {job.nodes} nodes is untested upstream "
                    "(Kubeflow's torchtune runtimes refuse it)", "lora-multinode",
                    hint="use nodes: 1, method.kind: full, or launcher: accelerate")


def _resume(job: Job) -> Iterator[Diagnostic]:
    from ftspec.targets.paths import default_paths
    from ftspec.targets.torchtune_resume import check as resume_check

    yield from resume_check(job, default_paths(job).output_dir)


def _ignored(job: Job) -> Iterator[Diagnostic]:
    spec = job.spec
    t = spec.training
    if spec.data.validation is not None:
        yield _warn(("data", "validation"), "the torchtune target does not evaluate; "
                    "validation data is ignored", "evaluation")
    if t.evaluation.strategy != "no":
        yield _warn(("training", "evaluation"), "the torchtune target does not evaluate; "
                    "evaluation settings are ignored", "evaluation")
    if spec.data.validation_split_ratio is not None:
        yield _warn(("data", "validation_split_ratio"), "the torchtune target does not "
                    "evaluate; no validation split is carved out", "evaluation")
    if len(t.logging.report_to) > 1:
        yield _err(("training", "logging", "report_to"), "torchtune's recipes take one metric "
                   f"logger; report_to lists {len(t.logging.report_to)}", "report-to",
                   hint="keep one sink (tensorboard, wandb, mlflow or jsonl)")
    if t.early_stopping is not None:
        yield _warn(("training", "early_stopping"), "torchtune has no early stopping; it is "
                    "ignored", "early-stopping")
    if spec.model.attn_implementation not in (None, "sdpa"):
        yield _warn(("model", "attn_implementation"), "torchtune uses its own attention "
                    "(SDPA); attn_implementation is ignored", "attn")



def _alternative(job: Job) -> str:
    from ftspec.spec.catalog.models import MODEL_FAMILIES, torchtune_alternative

    arch = job.spec.model.architecture
    family = arch.as_family() if arch is not None else MODEL_FAMILIES.get(
        job.spec.model.family or "")
    return torchtune_alternative(family) if family else "use launcher: accelerate"


def _builder_shape(job: Job) -> Iterator[Diagnostic]:
    """Custom numbers on a torchtune Llama builder: what that builder cannot build."""
    a = job.spec.model.architecture
    if a is None or a.base is None:
        return
    at = ("model", "architecture")
    tied = a.base == "llama3_2"  # llama3_2 builders tie the output to the embedding
    checks = (
        ("head_dim", a.head_dim not in (None, a.embed_dim // a.num_heads),
         "its head size is embed_dim / num_heads"),
        ("tied_embeddings", a.tied_embeddings not in (None, tied),
         f"{a.base} builders {'always' if tied else 'never'} tie the output projection"),
        ("num_experts", a.num_experts != 0, "its MLP is dense"),
        ("gated_mlp", not a.gated_mlp, "its MLP is gated (SwiGLU)"),
        ("shared_expert_dim", a.shared_expert_dim != 0, "its MLP is dense"),
        ("mamba", a.mamba is not None, "every layer is attention"),
        ("vision", a.vision is not None, "it is a text-only decoder"),
    )
    for field, wrong, why in checks:
        if wrong:
            yield _err(at + (field,), f"torchtune's {a.base} builder cannot build this: {why}",
                       "architecture-shape", hint="use launcher: accelerate")


def _multimodal(job: Job) -> Iterator[Diagnostic]:
    """torchtune 0.6.1 reads image+text rows (``multimodal_chat_dataset``,
    ``multimodal_instruct_dataset``) only through a vision model's transform (Llama 3.2
    Vision's tokenizer + CLIP image transform), and ftspec's torchtune target builds text
    decoders: nothing would turn the images into the model's inputs."""
    from ftspec.spec.rules.data import datasets

    for path, ds in datasets(job.spec):
        if ds.format == "multimodal":
            yield _err((*path, "format"), "torchtune 0.6.1's multimodal datasets feed only "
                       "its Llama 3.2 Vision models (their tokenizer and image transform); "
                       "the torchtune target builds text models", "multimodal",
                       hint="use launcher: accelerate (TRL's vision-language SFT)")
