"""fms_hf_tuning target: fms-hf-tuning's ``tuning.sft_trainer`` under ``accelerate launch``,
the command line of the SFTTrainer actuator (ado), flag for flag in its order:

    accelerate launch --config_file accelerate.yaml --num_processes N \\
        -m tuning.sft_trainer --model_name_or_path M --torch_dtype bfloat16 \\
        --use_flash_attn True --training_data_path D --response_template R \\
        --dataset_text_field F --log_level info --num_train_epochs 1 \\
        --per_device_train_batch_size B --max_seq_length L --eval_strategy no \\
        --output_dir O --gradient_accumulation_steps G --save_strategy no \\
        --learning_rate 1e-05 --weight_decay 0.0 --warmup_ratio 0.03 \\
        --lr_scheduler_type cosine --logging_steps 1 --include_tokens_per_second True \\
        --gradient_checkpointing True --packing False --peft_method none \\
        --optim adamw_torch --bf16 False --gradient_checkpointing_kwargs '{...}'

then the spec's other settings (seed, gradient clipping, LoRA's rank and modules, ...).
Where this command line differs from the actuator's on purpose (the logging flags), the
difference and why are listed in ``fms_hf_tuning_gaps.ACTUATOR_DIFFERENCES``.
Artifacts: ``accelerate.yaml`` (the accelerate launcher's config: the same distributed
settings) and ``command.sh``. ``trainer_args`` is the typed mapping; the argv is rendered
from it once (``argv``), as ``HfArgumentParser`` reads it back
(``tests/targets/test_fms_hf_tuning.py`` parses it with fms-hf-tuning's own dataclasses).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.dtypes import TORCH_NAMES
from ftspec.spec.ir import Job
from ftspec.spec.model.method import ALL_LINEAR
from ftspec.spec.platforms import LAUNCHER_FACTS
from ftspec.spec.urls import scheme
from ftspec.targets import accelerate, shell
from ftspec.targets.accelerate_config import config_dict, dump_config
from ftspec.targets.accelerate_sft import hf_optim
from ftspec.targets.base import Artifact, Launch, generated_line, launch_data
from ftspec.targets.launcher import KubeflowStyle, Launcher
from ftspec.targets.paths import RunPaths, default_paths, local_path

if TYPE_CHECKING:
    from ftspec.targets.gap import Gap

MODULE = "tuning.sft_trainer"
CONFIG_FILE = accelerate.CONFIG_FILE
COMMAND_FILE = "command.sh"
PEFT_METHODS = {"full": "none", "lora": "lora", "prompt_tuning": "pt"}
"""Spec method -> fms-hf-tuning's ``--peft_method``."""
ROW_FIELDS = {"text": "dataset_text_field", "chat": "dataset_conversation_field"}
"""Row formats its command line takes, and the flag that names their column."""
FILE_SCHEMES = ("file", "pvc")


def trainer_args(job: Job, paths: RunPaths | None = None) -> dict[str, Any]:
    """``tuning.sft_trainer``'s arguments, typed, in the seed's order (run ``check`` first)."""
    spec = job.spec
    t = spec.training
    p = paths or default_paths(job)
    train = spec.data.train
    assert train is not None and job.row_format.only in ROW_FIELDS, "run check() first"
    mixed = spec.model.autocasts  # over fp32 weights (mixed) or ones in dtype (autocast)
    a: dict[str, Any] = {
        "model_name_or_path": p.model_id,
        "torch_dtype": "float32" if spec.model.precision_mode == "mixed"
        else TORCH_NAMES[spec.model.dtype],
        "use_flash_attn": spec.model.attn_implementation == "flash_attention_2",
        "training_data_path": p.train.files,
    }
    if train.response_template is not None:
        a["response_template"] = train.response_template
    column = train.text_field if job.row_format.only == "text" else train.conversation_column
    a[ROW_FIELDS[job.row_format.only]] = column or \
        ("text" if job.row_format.only == "text" else "messages")
    a["log_level"] = "info"  # the actuator's (ACTUATOR_DIFFERENCES: the seed's text says debug)
    if t.max_steps is not None:
        a["max_steps"] = t.max_steps
    else:
        a["num_train_epochs"] = t.epochs or 1
    a["per_device_train_batch_size"] = job.micro_batch_size
    if job.max_seq_len is not None:
        a["max_seq_length"] = job.max_seq_len
    a["eval_strategy"] = t.evaluation.strategy
    a["output_dir"] = p.output_dir
    a["gradient_accumulation_steps"] = job.gradient_accumulation_steps
    a["save_strategy"] = t.checkpointing.strategy
    a["learning_rate"] = t.learning_rate
    a["weight_decay"] = t.optimizer.weight_decay
    if job.warmup_steps is not None:  # given, or the ratio of a known step count
        a["warmup_steps"] = job.warmup_steps
    else:
        a["warmup_ratio"] = t.scheduler.warmup_ratio or 0.0
    a["lr_scheduler_type"] = t.scheduler.name
    a["logging_steps"] = t.logging.steps
    a["include_tokens_per_second"] = True
    a["gradient_checkpointing"] = t.gradient_checkpointing
    a["packing"] = spec.data.packed
    a["peft_method"] = PEFT_METHODS[spec.method.kind]
    a["optim"] = hf_optim(job)
    a["bf16"] = mixed and spec.model.dtype == "bf16"
    if t.gradient_checkpointing:
        a["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    return a | _rest(job)


def _rest(job: Job) -> dict[str, Any]:
    """The spec's settings the seed's command line leaves at their defaults."""
    spec = job.spec
    t = spec.training
    out: dict[str, Any] = {}
    if spec.model.autocasts and spec.model.dtype == "fp16":  # over fp32 or fp16 weights
        out["fp16"] = True
    if spec.model.autocasts and job.device == "cpu":
        out["use_cpu"] = True
    if t.seed is not None:
        out["seed"] = t.seed
    out["max_grad_norm"] = t.max_grad_norm if t.max_grad_norm is not None else 0.0
    o = t.optimizer
    if o.betas != (0.9, 0.999):
        out.update(adam_beta1=o.betas[0], adam_beta2=o.betas[1])
    if o.eps != 1e-8:
        out["adam_epsilon"] = o.eps
    # fms-hf-tuning's default (and the actuator's) is epoch: ACTUATOR_DIFFERENCES says why not
    out["logging_strategy"] = t.logging.strategy
    if t.checkpointing.strategy == "steps":
        out["save_steps"] = t.checkpointing.steps or 500
    if t.checkpointing.total_limit is not None:
        out["save_total_limit"] = t.checkpointing.total_limit
    if t.evaluation.strategy == "steps":
        out["eval_steps"] = t.evaluation.steps or t.logging.steps
    validation = spec.data.validation
    if validation is not None:
        out["validation_data_path"] = local_path(validation.uri)
    method = spec.method
    if method.kind == "lora":
        lora = method.lora_settings
        modules = ["all-linear"] if list(lora.target_modules) == [ALL_LINEAR] \
            else list(job.lora_modules) + (["lm_head"] if lora.output else [])
        out.update(r=lora.rank, lora_alpha=int(lora.alpha), lora_dropout=float(lora.dropout),
                   target_modules=modules)
        if lora.bias != "none":
            out["bias"] = lora.bias
    pt = method.prompt_tuning
    if method.kind == "prompt_tuning" and pt is not None:
        out["num_virtual_tokens"] = pt.num_virtual_tokens
        out["prompt_tuning_init"] = pt.init.upper()
        if pt.init_text is not None:
            out["prompt_tuning_init_text"] = pt.init_text
    sinks = [r for r in t.logging.report_to if r != "jsonl"]
    if sinks:
        out["report_to"] = sinks
    return out


def _word(value: Any) -> str:
    """One value as ``HfArgumentParser`` reads it: ``True``/``False``, JSON for a dict."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def argv(args: Mapping[str, Any]) -> list[str]:
    """``--key value`` for every argument; a list is one flag with several values."""
    out: list[str] = []
    for key, value in args.items():
        values = value if isinstance(value, list) else [value]
        out += [f"--{key}", *(_word(v) for v in values)]
    return out


def launch_words(job: Job, paths: RunPaths | None = None,
                 config: shell.Word = CONFIG_FILE) -> list[shell.Word]:
    words: list[shell.Word] = ["accelerate", "launch", "--config_file", config]
    if job.world_size > 1:
        words += ["--num_processes", str(job.world_size)]
    if job.nodes > 1:
        words += ["--num_machines", str(job.nodes), "--machine_rank", shell.EnvRef("NODE_RANK"),
                  "--main_process_ip", shell.EnvRef("MASTER_ADDR")]
    return words + ["-m", MODULE, *argv(trainer_args(job, paths))]


def _env(job: Job) -> dict[str, str]:
    return {"ACCELERATE_USE_CPU": "true"} if job.device == "cpu" and job.world_size > 1 else {}


def config(job: Job) -> dict[str, Any]:
    """accelerate's config, as the accelerate launcher writes it, except that activation
    checkpointing is the model's (``--gradient_checkpointing``, as the seed runs it), not
    FSDP's: the seed's FSDP config has no ``fsdp_activation_checkpointing``."""
    cfg = config_dict(job)
    fsdp = cfg.get("fsdp_config")
    if isinstance(fsdp, dict) and fsdp.get("fsdp_activation_checkpointing"):
        fsdp["fsdp_activation_checkpointing"] = False
    return cfg


def config_text(job: Job) -> str:
    return f"# {generated_line(job)}\n" + dump_config(config(job))


def launch(job: Job, paths: RunPaths | None = None) -> Launch:
    return Launch(argv=shell.plain(launch_words(job, paths)),
                  files={CONFIG_FILE: config_text(job)}, env=_env(job))


def command_text(job: Job) -> str:
    words = launch_words(job, config=shell.ScriptFile(CONFIG_FILE))
    parts = [shell.quote(w) for w in words]
    lines: list[str] = []
    for part in parts:  # one flag and its values per line, for review
        if lines and not part.startswith("--") and part != "-m":
            lines[-1] += " " + part
        else:
            lines.append(part)
    return shell.script([generated_line(job)], ["exec " + " \\\n    ".join(lines)],
                        env=_env(job))


_FINDINGS = Findings("fms_hf_tuning")
_error = _FINDINGS.error


def check(job: Job) -> list[Diagnostic]:
    """What ``tuning.sft_trainer``'s command line cannot say, located."""
    from ftspec.targets.accelerate_checks import fp16_on_cpu, process_per_gpu

    spec = job.spec
    found: list[Diagnostic] = [*fp16_on_cpu(job, _FINDINGS), *process_per_gpu(job, _FINDINGS)]
    fsdp = spec.distributed.fsdp
    if job.strategy == "fsdp" and fsdp is not None and fsdp.version == 2 \
            and fsdp.sharding not in ("full_shard", "shard_grad_op"):
        found.append(_error(("distributed", "fsdp", "sharding"), "accelerate's FSDP2 config "
                            f"reshards or not (full_shard / shard_grad_op); {fsdp.sharding} "
                            "needs FSDP1", "fsdp2-sharding", hint="use version: 1"))
    train = spec.data.train
    if spec.data.mixture is not None:
        found.append(_error(("data", "mixture"), "fms-hf-tuning's command line takes one "
                            "training file (a mixture needs its data_config file)", "mixture",
                            hint="use data.train, or launcher: accelerate"))
    if train is not None and scheme(train.uri) not in FILE_SCHEMES:
        found.append(_error(("data", "train", "uri"), "fms-hf-tuning reads "
                            "--training_data_path from a file, not a hub dataset",
                            "data-file", hint="point data.train.uri at a JSON Lines file "
                            "(file:// or pvc://)"))
    if train is not None and job.row_format.only not in ROW_FIELDS:
        found.append(_error(("data", "train", "format"), f"fms-hf-tuning's command line "
                            f"names a text or a chat column, not {job.row_format.name} rows",
                            "row-format", hint="use format: text or chat, or launcher: "
                            "accelerate"))
    if spec.method.kind not in PEFT_METHODS:
        found.append(_error(("method", "kind"), f"fms-hf-tuning's --peft_method is none, "
                            f"lora or pt (prompt tuning), not {spec.method.kind}",
                            "method", hint="use method.kind: full, lora or prompt_tuning"))
    if spec.method.kind == "lora" and not float(spec.method.lora_settings.alpha).is_integer():
        found.append(_error(("method", "lora", "alpha"), "fms-hf-tuning's --lora_alpha is an "
                            f"integer, not {spec.method.lora_settings.alpha}", "lora-alpha",
                            hint="use a whole number"))
    if spec.distributed.expert_parallel > 1:
        found.append(_error(("distributed", "expert_parallel"), "fms-hf-tuning's expert "
                            "parallelism (--fast_moe) needs the fms-acceleration plugin, "
                            "which ftspec does not configure", "expert-parallel"))
    return found


class FmsHfTuningTarget:
    name = "fms_hf_tuning"
    facts = LAUNCHER_FACTS["fms_hf_tuning"]
    kubeflow_style: KubeflowStyle = "command"

    def check(self, job: Job) -> list[Diagnostic]:
        return check(job)

    def compile(self, job: Job) -> list[Artifact]:
        return [Artifact(CONFIG_FILE, "config", config_text(job), obj=config(job)),
                Artifact(COMMAND_FILE, "command", command_text(job),
                         obj=launch_data(launch(job)))]

    def launch(self, job: Job, paths: RunPaths | None = None) -> Launch:
        return launch(job, paths)

    def trainer_args(self, job: Job, paths: RunPaths | None = None) -> Mapping[str, Any]:
        return trainer_args(job, paths)

    def rank_flags(self, job: Job, rank: str, addr: str, port: str) -> dict[str, str]:
        return accelerate.rank_flags(job, rank, addr, port)

    def download_step(self, job: Job) -> list[str]:
        return []  # transformers reads hf:// model ids itself

    def probe(self, job: Job) -> list[Diagnostic]:
        return []  # compiling reads nothing installed

    def gaps(self) -> tuple[Gap, ...]:
        from ftspec.targets.fms_hf_tuning_gaps import GAPS

        return GAPS


TARGET: Launcher = FmsHfTuningTarget()
