"""torchtune target: ``tune run [--nnodes N --nproc-per-node P] RECIPE --config CONFIG``.

The recipe comes from the method x single/distributed; the base config from the model
family (``<folder>/<size>_<lora|qlora|full>[_single_device]``, as shipped with the installed
torchtune); the spec becomes ``key=value`` overrides (``~key`` removes a key of a component
that is replaced). Artifacts: ``config.yaml`` (the base config with every override applied,
which the command runs) and ``command.sh`` (the command, plus the equivalent base-config +
overrides form as a comment). Checks live in ``torchtune_checks``; the mapping is here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ftspec.spec import module_names
from ftspec.spec.catalog.loaders import LOADERS, detect, is_folder
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job
from ftspec.spec.platforms import LAUNCHER_FACTS
from ftspec.spec.urls import hub_parts, scheme
from ftspec.targets import shell
from ftspec.targets.base import Artifact, Launch, generated_line, launch_data
from ftspec.targets.chat_format import NAMED
from ftspec.targets.launcher import KubeflowStyle, Launcher
from ftspec.targets.paths import RunPaths, default_paths
from ftspec.targets.torchtune_configs import (
    Override,
    Remove,
    Set,
    dump_yaml,
    has_path,
    literal,
    load_config,
    resolve,
)
from ftspec.targets.torchtune_defaults import is_implicit
from ftspec.targets.torchtune_resume import SHIM_RECIPE, needs_shim
from ftspec.targets.torchtune_resume import overrides as resume_overrides
from ftspec.targets.torchtune_snapshot import shipped

if TYPE_CHECKING:
    from ftspec.targets.gap import Gap

CONFIG_FILE = "config.yaml"
COMMAND_FILE = "command.sh"

HF_TO_TORCHTUNE_ATTN = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj",
                        "o_proj": "output_proj"}
MLP_MODULES = frozenset(module_names.MLP_MODULES)

OPTIMIZERS: dict[str, str] = {
    "adamw": "torch.optim.AdamW",
    "adam": "torch.optim.Adam",
    "sgd": "torch.optim.SGD",
    "rmsprop": "torch.optim.RMSprop",
    "adamw_8bit": "bitsandbytes.optim.AdamW8bit",
    "paged_adamw_8bit": "bitsandbytes.optim.PagedAdamW8bit",
    "paged_adamw_32bit": "bitsandbytes.optim.PagedAdamW",
}
COSINE = "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup"
SCHEDULERS = ("cosine", "constant", "constant_with_warmup")
"""torchtune ships one schedule; constant ones are its cosine with ``num_cycles: 0``."""
LOSSES = {
    "cross_entropy": "torch.nn.CrossEntropyLoss",
    "chunked_cross_entropy": "torchtune.modules.loss.CEWithChunkedOutputLoss",
}
DATASETS = {
    "instruct": "torchtune.datasets.instruct_dataset",
    "alpaca": "torchtune.datasets.alpaca_dataset",
    "chat": "torchtune.datasets.chat_dataset",
    "sharegpt": "torchtune.datasets.chat_dataset",
    "text": "torchtune.datasets.text_completion_dataset",
}

ADDITIONS: dict[str, str] = {
    "model.use_dora": "DoRA: the LoRA builders' use_dora argument",
    "model.quantize_base": "QLoRA where torchtune ships no qlora config for the topology",
    "model.apply_lora_to_output": "LoRA on the output projection (lora.output)",
    "model.vocab_size": "custom architecture dimensions (model.architecture)",
    "model.num_layers": "custom architecture dimensions",
    "model.num_heads": "custom architecture dimensions",
    "model.num_kv_heads": "custom architecture dimensions",
    "model.embed_dim": "custom architecture dimensions",
    "model.intermediate_dim": "custom architecture dimensions",
    "model.max_seq_len": "custom architecture dimensions",
    "model.lora_attn_modules": "LoRA settings on a custom architecture's builder",
    "model.apply_lora_to_mlp": "LoRA settings on a custom architecture's builder",
    "model.lora_rank": "LoRA settings on a custom architecture's builder",
    "model.lora_alpha": "LoRA settings on a custom architecture's builder",
    "model.lora_dropout": "LoRA settings on a custom architecture's builder",
    "tokenizer.special_tokens_path": "llama3 tokenizers: model.tokenizer.special_tokens_uri",
    "tokenizer.prompt_template": "a named chat template (model.chat_template)",
    "lr_scheduler": "full-finetune configs ship without a schedule; the spec always has one",
    "lr_scheduler.num_cycles": "cosine cycles (scheduler.num_cycles; 0 = constant)",
    "optimizer.betas": "Adam betas",
    "optimizer.eps": "Adam epsilon",
    "optimizer.momentum": "SGD momentum",
    "optimizer.weight_decay": "decoupled weight decay (absent from some shipped configs)",
    "optimizer.fused": "fused AdamW (absent from some shipped configs)",
    "dataset.source": "the dataset's hub id or loader (json for local files)",
    "dataset.data_files": "the data file(s) (data.train.uri)",
    "dataset.data_dir": "a folder of data files (data.train.uri)",
    "dataset.delimiter": "TSV files (loader tsv)",
    "dataset.split": "dataset split",
    "dataset.name": "dataset subset (data.train.subset)",
    "dataset.column_map": "column names (data.train.column_map)",
    "dataset.train_on_input": "loss on prompt tokens",
    "dataset.new_system_prompt": "system prompt",
    "dataset.conversation_column": "chat datasets",
    "dataset.conversation_style": "chat datasets",
    "dataset.column": "text datasets: the text column",
    "fsdp_cpu_offload": "FSDP parameter offload (distributed recipes read it with a default)",
    "fsdp_reshard_after_forward": "FSDP2 resharding (distributed recipes read it with a default)",
    "clip_grad_norm": "gradient clipping (absent from some shipped configs)",
    "enable_activation_offloading": "activation offloading (absent from some shipped configs)",
    "save_adapter_weights_only": "PEFT methods: adapter-only checkpoints",
    "seed": "random seed",
    "shuffle": "shuffle",
    "log_every_n_steps": "logging interval",
    "metric_logger.log_dir": "metric logger folder (training.logging.report_to)",
}
"""Override keys that may be absent from a base config, and why they are valid there."""


@dataclass(frozen=True)
class TorchtuneRun:
    """The torchtune run a Job compiles to."""

    recipe: str
    config: str
    """The shipped base config, ``llama3_2/1B_lora``."""
    distributed: bool
    overrides: tuple[Override, ...]
    resolved: dict[str, Any]
    """The base config with every override applied (what ``config.yaml`` holds)."""

    def override_args(self) -> list[str]:
        return [op.cli() for op in self.overrides]


def recipe_name(job: Job) -> str:
    """What ``tune run`` runs: a shipped recipe, or ftspec's resume of the single-device
    LoRA recipe (``torchtune_resume``)."""
    kind = "full" if job.spec.method.kind == "full" else "lora"
    if kind == "lora" and needs_shim(job):
        return SHIM_RECIPE
    return f"{kind}_finetune_{'distributed' if job.world_size > 1 else 'single_device'}"


def config_candidates(job: Job) -> list[tuple[str, bool]]:
    """Base configs to try, in order: (name, needs ``model.quantize_base=True``)."""
    facts = job.model.torchtune_config
    if facts is None:
        return []
    folder, size = facts
    single = job.world_size == 1
    kind = job.spec.method.kind
    sfx = "_single_device" if single else ""
    if kind == "full":
        if single:
            names = [f"{size}_full_single_device", f"{size}_full_low_memory"]
        else:
            names = ([f"{size}_full_multinode"] if job.nodes > 1 else []) + [f"{size}_full"]
        return [(f"{folder}/{n}", False) for n in names]
    if kind == "qlora" and not job.model.custom:
        return [(f"{folder}/{size}_qlora{sfx}", False), (f"{folder}/{size}_lora{sfx}", True)]
    if kind == "dora" and not job.model.custom:
        return [(f"{folder}/{size}_dora{sfx}", False), (f"{folder}/{size}_lora{sfx}", False)]
    return [(f"{folder}/{size}_lora{sfx}", kind == "qlora")]


def base_config(job: Job) -> tuple[str, bool] | None:
    for name, quantize in config_candidates(job):
        if shipped(name):
            return name, quantize
    return None


def plan_run(job: Job, paths: RunPaths | None = None) -> TorchtuneRun:
    """Recipe, base config and overrides; call ``check`` first (this assumes it passed)."""
    found = base_config(job)
    if found is None:
        raise ValueError(f"no torchtune config for {job.model.display}; run check() first")
    name, quantize = found
    base = load_config(name)
    ops = _overrides(job, base, paths or default_paths(job), quantize)
    return TorchtuneRun(recipe_name(job), name, job.world_size > 1, tuple(ops),
                        resolve(base, ops))


def _overrides(job: Job, base: dict[str, Any], paths: RunPaths, quantize: bool
               ) -> list[Override]:
    t = job.spec.training
    ops: list[Override] = [Set("output_dir", paths.output_dir)]
    ops += _model(job, base, quantize)
    ops += _tokenizer(job, base, paths)
    ops += [Set("checkpointer.checkpoint_dir", paths.model_dir)]
    if job.model.custom:
        ops.append(Set("checkpointer.checkpoint_files", ["model.safetensors"]))
    ops += _replace(base, "dataset", _dataset(job, paths))
    ops += _loop(job)
    ops += _replace(base, "optimizer", _optimizer(job))
    ops += _scheduler(job, base)
    ops += _replace(base, "loss", {"_component_": LOSSES[t.loss]})
    ops += [Set(k, v) for k, v in resume_overrides(job, paths.output_dir).items()]
    top = _top_level(job, base)
    ops += _replace(base, "metric_logger", metric_logger(job))
    # A key the base config leaves out stays out when the spec asks for its default.
    ops += [op for op in top if op.key in base or not is_implicit(None, op.key, op.value)]
    return _user_overrides(ops, base, job.spec.overrides.torchtune)


def _loop(job: Job) -> list[Override]:
    """Seed, shuffling, batch, accumulation and the epochs (max_steps: one epoch that long)."""
    t = job.spec.training
    per_epoch: int | None
    if t.max_steps is not None:
        epochs, per_epoch = 1, t.max_steps
    else:
        epochs, per_epoch = t.epochs or 1, t.max_steps_per_epoch
    return [
        Set("seed", t.seed), Set("shuffle", job.spec.data.shuffle),
        Set("batch_size", job.micro_batch_size),
        Set("gradient_accumulation_steps", job.gradient_accumulation_steps),
        Set("epochs", epochs), Set("max_steps_per_epoch", per_epoch),
    ]


def _scheduler(job: Job, base: dict[str, Any]) -> list[Override]:
    """torchtune's cosine schedule with warm-up (flat with no cycles for constant)."""
    sched = job.spec.training.scheduler
    constant = sched.name != "cosine"
    if "lr_scheduler" in base or not constant or job.warmup_steps:
        return _replace(base, "lr_scheduler", {
            "_component_": COSINE,
            "num_warmup_steps": job.warmup_steps or 0,
            "num_cycles": 0.0 if constant else sched.num_cycles,
        })
    return []  # the recipe's default (no scheduler) is the constant schedule asked for


def _top_level(job: Job, base: dict[str, Any]) -> list[Set]:
    """The recipe's top-level keys the spec sets (all of them, before the implicit-default
    filter)."""
    spec = job.spec
    t = spec.training
    top: list[Set] = [
        Set("clip_grad_norm", t.max_grad_norm),
        Set("compile", t.compile),
        Set("device", job.device),
        Set("dtype", spec.model.dtype),
        Set("enable_activation_checkpointing", t.gradient_checkpointing),
        Set("enable_activation_offloading", t.activation_offloading),
        Set("log_every_n_steps", t.logging.steps),
    ]
    if base.get("optimizer_in_bwd") and (t.max_grad_norm is not None
                                         or job.gradient_accumulation_steps > 1):
        # Shipped single-device full configs step the optimizer inside backward, which the
        # recipe refuses with gradient clipping or accumulation: the spec's clipping and
        # accumulation win, with the optimizer stepped after backward as usual.
        top.append(Set("optimizer_in_bwd", False))
    if spec.method.kind != "full":
        # torchtune's LoRA recipes save the merged model unless adapter-only is asked for.
        out = spec.output
        top.append(Set("save_adapter_weights_only",
                       out.save_adapter_only and not out.merge_adapter if out else True))
    if job.world_size > 1:
        fsdp = spec.distributed.fsdp
        top.append(Set("fsdp_cpu_offload", bool(fsdp and fsdp.cpu_offload)))
        top.append(Set("fsdp_reshard_after_forward",
                       fsdp is None or (fsdp.sharding != "shard_grad_op"
                                        and fsdp.reshard_after_forward)))
    return top


def _user_overrides(ops: list[Override], base: dict[str, Any], overrides: dict[Any, Any]
                    ) -> list[Override]:
    """``ops`` with overrides.torchtune applied: ``~key`` drops the key (and what ftspec
    set under it) from the config, any other key is set."""
    for key, value in overrides.items():
        name = str(key)
        if name.startswith("~"):  # torchtune's removal syntax: the key leaves the config
            gone = name[1:]
            ops = [op for op in ops if op.key != gone and not op.key.startswith(gone + ".")]
            if has_path(base, gone):
                ops.append(Remove(gone))
        else:
            ops.append(Set(name, value))
    return ops


METRIC_LOGGERS = {
    "tensorboard": "torchtune.training.metric_logging.TensorBoardLogger",
    "wandb": "torchtune.training.metric_logging.WandBLogger",
    "mlflow": "torchtune.training.metric_logging.MLFlowLogger",
    "jsonl": "torchtune.training.metric_logging.DiskLogger",
}
STDOUT_LOGGER = "torchtune.training.metric_logging.StdoutLogger"


def metric_logger(job: Job) -> dict[str, Any]:
    """torchtune takes one metric logger: the spec's ``report_to`` sink, else stdout.

    Stdout (``Step 3 | loss:5.77 lr:0.01 tokens_per_second_per_gpu:…``) is what ftspec's
    progress reads on every backend; with a sink, progress falls back to the recipe's
    ``epoch|step|Loss`` line (no learning rate or rate there).
    """
    sinks = job.spec.training.logging.report_to
    if not sinks:
        return {"_component_": STDOUT_LOGGER}
    logger: dict[str, Any] = {"_component_": METRIC_LOGGERS[sinks[0]]}
    if sinks[0] in ("tensorboard", "jsonl"):
        logger["log_dir"] = "${output_dir}/logs"
    return logger


def _replace(base: dict[str, Any], key: str, new: dict[str, Any]) -> list[Override]:
    """Replace a component: drop the base's other keys, then set the new ones.

    A key the base's own component leaves out that would be set to its default stays out.
    """
    old = base.get(key)
    ops: list[Override] = []
    same = isinstance(old, dict) and old.get("_component_") == new.get("_component_")
    if isinstance(old, dict) and not same:
        ops += [Remove(f"{key}.{k}") for k in old if k != "_component_" and k not in new]
    component = new.get("_component_")
    # Same component (or none before): a key it leaves out that would get its own default
    # stays out. A different component gets every key written.
    implicit_ok = same or old is None
    ops += [Set(f"{key}.{k}", v) for k, v in new.items()
            if not (implicit_ok and isinstance(old, dict | None) and k not in (old or {})
                    and is_implicit(component, k, v))]
    return ops


def _model(job: Job, base: dict[str, Any], quantize: bool) -> list[Override]:
    spec = job.spec
    lora = spec.method.lora
    settings: dict[str, Any] = {}
    if job.lora_modules:
        settings["lora_attn_modules"] = [HF_TO_TORCHTUNE_ATTN[m] for m in job.lora_modules
                                         if m in HF_TO_TORCHTUNE_ATTN]
        settings["apply_lora_to_mlp"] = any(m in MLP_MODULES for m in job.lora_modules)
        if lora is not None and lora.output or has_path(base, "model.apply_lora_to_output"):
            settings["apply_lora_to_output"] = bool(lora and lora.output)
        defaults = spec.method.lora_settings
        settings["lora_rank"] = defaults.rank
        settings["lora_alpha"] = defaults.alpha
        settings["lora_dropout"] = defaults.dropout
        if spec.method.kind == "dora":
            settings["use_dora"] = True
        if quantize:
            settings["quantize_base"] = True
    if job.model.custom:
        a = spec.model.architecture
        assert a is not None and job.model.torchtune_builder is not None
        builder = a.base if not job.lora_modules else f"lora_{a.base}"
        model: dict[str, Any] = {"_component_": f"{job.model.torchtune_builder}.{builder}"}
        model.update(vocab_size=a.vocab_size, num_layers=a.num_layers, num_heads=a.num_heads,
                     num_kv_heads=a.num_kv_heads, embed_dim=a.embed_dim,
                     intermediate_dim=a.intermediate_dim, max_seq_len=a.max_seq_len)
        model.update(settings)
        return _replace(base, "model", model)
    found = base.get("model")
    old: dict[str, Any] = found if isinstance(found, dict) else {}
    component = old.get("_component_")
    return [Set(f"model.{k}", v) for k, v in settings.items()
            if k in old or not is_implicit(component, k, v)]


def _tokenizer(job: Job, base: dict[str, Any], paths: RunPaths) -> list[Override]:
    ops: list[Override] = [Set("tokenizer.max_seq_len", job.max_seq_len)]
    old_dir = str(base.get("checkpointer", {}).get("checkpoint_dir", "")).rstrip("/")
    if paths.tokenizer is not None:
        ops.append(Set("tokenizer.path", paths.tokenizer))
    for key in ("path", "merges_file"):
        value = base.get("tokenizer", {}).get(key)
        if paths.tokenizer is not None and key == "path":
            continue
        if isinstance(value, str) and old_dir and value.startswith(old_dir + "/"):
            rebased = paths.model_dir.rstrip("/") + value[len(old_dir):]
            ops.append(Set(f"tokenizer.{key}", rebased))
    if paths.special_tokens is not None:
        ops.append(Set("tokenizer.special_tokens_path", paths.special_tokens))
    template = job.spec.model.chat_template
    if template is not None and template in NAMED:
        ops.append(Set("tokenizer.prompt_template", NAMED[template]))
    return ops


def tokenizer_config(job: Job) -> str | None:
    """A shipped config whose tokenizer is the model's: the run's own, else any of the size."""
    found = base_config(job)
    if found is not None:
        return found[0]
    facts = job.model.torchtune_config
    if facts is None:
        return None
    folder, size = facts
    return next((f"{folder}/{size}_{kind}" for kind in ("lora_single_device", "lora", "full")
                 if shipped(f"{folder}/{size}_{kind}")), None)


def tokenizer_section(job: Job, paths: RunPaths) -> dict[str, Any]:
    """The ``tokenizer`` section of the config the torchtune target would write for ``job``
    (torchtune must be installed: it reads the shipped base config)."""
    name = tokenizer_config(job)
    if name is None:
        raise ValueError(f"no torchtune config for {job.model.display}")
    base = load_config(name)
    section: dict[str, Any] = resolve(base, _tokenizer(job, base, paths))["tokenizer"]
    return section


def _dataset(job: Job, paths: RunPaths) -> dict[str, Any]:
    spec = job.spec
    ds = spec.data.train
    fmt = job.row_format.only
    rows = job.row_format.at(("data", "train"))
    assert ds is not None and fmt is not None and rows is not None
    out: dict[str, Any] = {"_component_": DATASETS[fmt]}
    out.update(dataset_location(ds.uri, ds.loader, paths.train.files))
    out["split"] = literal(ds.split)
    if ds.subset:
        out["name"] = literal(ds.subset)
    if fmt in ("instruct", "alpaca"):
        if ds.column_map:
            out["column_map"] = {k: literal(v) for k, v in ds.column_map.items()}
        out["train_on_input"] = rows.loss == "all"
        if ds.new_system_prompt is not None and fmt == "instruct":
            out["new_system_prompt"] = literal(ds.new_system_prompt)
    elif fmt in ("chat", "sharegpt"):
        out["conversation_column"] = literal(rows.column_for("messages"))
        out["conversation_style"] = ("sharegpt" if fmt == "sharegpt"
                                     else ds.conversation_style or "sharegpt")
        out["train_on_input"] = rows.loss == "all"
        if ds.new_system_prompt is not None:
            out["new_system_prompt"] = literal(ds.new_system_prompt)
    elif fmt == "text":
        out["column"] = literal(rows.column_for("text"))
    out["packed"] = spec.data.packed
    return out


def dataset_location(uri: str, loader: str | None, local: str | None) -> dict[str, Any]:
    """torchtune's dataset ``source`` (load_dataset's path) and data_files / data_dir.

    hf:// goes through the Hub's own loading (``source`` = the repository; a file or folder
    in it as data_files / data_dir) unless a loader is named; a local file is read by the
    loader its name implies (or the spec's ``loader``); a local folder without one is left
    to ``datasets``' own inference (``source`` = the folder)."""
    if scheme(uri) == "hf" and loader is None:
        repo, rel = hub_parts(uri)
        if not rel:
            return {"source": repo}
        return {"source": repo, ("data_dir" if is_folder(rel) else "data_files"): rel}
    if scheme(uri) == "hf":
        repo, rel = hub_parts(uri)  # a named loader reads the repository's files directly
        local = f"hf://datasets/{repo}" + (f"/{rel}" if rel else "")
    path = local or uri
    name = loader or detect(path)
    if name is None:
        return {"source": path}
    found = LOADERS[name]
    key = "data_dir" if is_folder(path) else "data_files"
    return {"source": found.builder, key: path, **found.kwargs}


def _optimizer(job: Job) -> dict[str, Any]:
    o = job.spec.training.optimizer
    out: dict[str, Any] = {"_component_": OPTIMIZERS[o.name], "lr": job.spec.training.learning_rate,
                           "weight_decay": o.weight_decay}
    if o.name in ("adamw", "adam", "adamw_8bit", "paged_adamw_8bit", "paged_adamw_32bit"):
        out["betas"] = list(o.betas)
        out["eps"] = o.eps
    if o.name in ("adamw", "adam"):
        out["fused"] = o.fused
    if o.name in ("sgd", "rmsprop"):
        out["momentum"] = o.momentum
    return out


def torchrun_flags(job: Job) -> list[str]:
    if job.world_size == 1:
        return []
    return ["--nnodes", str(job.nodes), "--nproc-per-node", str(job.procs_per_node)]


def launch(job: Job, paths: RunPaths | None = None, config_path: str = CONFIG_FILE) -> Launch:
    """The ``tune run`` command that runs the resolved config, and that config's file."""
    return _launch(job, plan_run(job, paths), config_path)


def _launch(job: Job, run: TorchtuneRun, config_path: str = CONFIG_FILE) -> Launch:
    argv = ("tune", "run", *torchrun_flags(job), run.recipe, "--config", config_path)
    return Launch(argv=argv, files={CONFIG_FILE: _config_text(job, run)}, env={})


def _config_text(job: Job, run: TorchtuneRun) -> str:
    head = (f"# {generated_line(job)}\n"
            f"# Base: torchtune's {run.config}.yaml with the spec's overrides applied.\n")
    return head + dump_yaml(run.resolved)


def _command_text(job: Job, run: TorchtuneRun) -> str:
    words = ["tune", "run", *torchrun_flags(job), run.recipe]
    comments = [
        generated_line(job),
        "Runs the resolved config next to this script. The same run, from the shipped",
        "base config and overrides:",
        f"  {shell.join([*words, '--config', run.config])} \\",
    ]
    args = run.override_args()
    for i, arg in enumerate(args):
        cont = " \\" if i < len(args) - 1 else ""
        comments.append(f"    {shell.quote(arg)}{cont}")
    command = "exec " + shell.join([*words, "--config", shell.ScriptFile(CONFIG_FILE)])
    return shell.script(comments, [command])


class TorchtuneTarget:
    name = "torchtune"
    facts = LAUNCHER_FACTS["torchtune"]
    kubeflow_style: KubeflowStyle = "torchtune-runtime"

    def check(self, job: Job) -> list[Diagnostic]:
        from ftspec.targets.torchtune_checks import check

        return check(job)

    def compile(self, job: Job) -> list[Artifact]:
        run = plan_run(job)
        return [
            Artifact(COMMAND_FILE, "command", _command_text(job, run),
                     obj=launch_data(_launch(job, run))),
            Artifact(CONFIG_FILE, "config", _config_text(job, run), obj=run.resolved),
        ]

    def launch(self, job: Job, paths: RunPaths | None = None) -> Launch:
        return launch(job, paths)

    def trainer_args(self, job: Job, paths: RunPaths | None = None) -> Mapping[str, Any]:
        """The overrides of the base config: key -> value (``None``: a removed key)."""
        return {op.key: op.value if isinstance(op, Set) else None
                for op in plan_run(job, paths).overrides}

    def rank_flags(self, job: Job, rank: str, addr: str, port: str) -> dict[str, str]:
        """torchrun's flags, through ``tune run``."""
        return {"--nnodes": str(job.nodes), "--nproc-per-node": str(job.procs_per_node),
                "--node-rank": rank, "--rdzv-backend": "static",
                "--rdzv-endpoint": f"{addr}:{port}"}

    def download_step(self, job: Job) -> list[str]:
        """torchtune reads a local checkpoint: an ``hf://`` model is fetched by ``tune
        download`` into the folder the launcher expects (``ftspec.targets.paths``)."""
        from ftspec.spec.urls import scheme
        from ftspec.targets.paths import local_path

        uri = job.spec.model.uri
        if scheme(uri) != "hf":
            return []
        repo = uri[len("hf://"):].strip("/")
        return ["tune", "download", repo, "--output-dir", local_path(uri)]

    def probe(self, job: Job) -> list[Diagnostic]:
        from ftspec.targets.torchtune_snapshot import probe

        return probe(job)

    def gaps(self) -> tuple[Gap, ...]:
        from ftspec.targets.torchtune_gaps import GAPS

        return GAPS


TARGET: Launcher = TorchtuneTarget()
