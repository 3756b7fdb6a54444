"""accelerate target: an accelerate config file and the ``accelerate launch`` command.

``accelerate launch --config_file accelerate.yaml [--num_processes N] -m MODULE ARGS`` runs
the training entrypoint: ``entrypoint.module`` / ``entrypoint.script`` from the spec, else
ftspec's default Hugging Face SFT entrypoint (``ftspec.targets.entrypoints.hf_sft``). The
spec's model, data (``accelerate_data``), method and training settings become that
entrypoint's flags (``training_args``); user entrypoints receive the same flags and
``entrypoint.args``. Artifacts: ``accelerate.yaml`` and ``command.sh``.
"""

from __future__ import annotations

import json

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job
from ftspec.spec.model.method import IA3, PromptTuning
from ftspec.targets import shell
from ftspec.targets.accelerate_config import config_dict, dump_config, uses_fsdp_checkpointing
from ftspec.targets.accelerate_data import data_args
from ftspec.targets.base import Artifact, Launch, launch_data
from ftspec.targets.paths import RunPaths, default_paths, local_path

CONFIG_FILE = "accelerate.yaml"
COMMAND_FILE = "command.sh"
DEFAULT_ENTRYPOINT = "ftspec.targets.entrypoints.hf_sft"

HF_OPTIMIZERS: dict[str, str] = {
    "adamw": "adamw_torch", "adam": "adam", "sgd": "sgd", "adafactor": "adafactor",
    "adamw_8bit": "adamw_bnb_8bit", "paged_adamw_8bit": "paged_adamw_8bit",
    "paged_adamw_32bit": "paged_adamw_32bit", "lion": "lion_32bit", "rmsprop": "rmsprop",
}
"""Spec optimizer -> Hugging Face ``optim`` name (adamw + fused -> adamw_torch_fused)."""
BNB_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "uint8": "uint8"}


def uses_default_entrypoint(job: Job) -> bool:
    e = job.spec.entrypoint
    return e.module is None and e.script is None


def hf_optim(job: Job) -> str:
    o = job.spec.training.optimizer
    name = HF_OPTIMIZERS[o.name]
    if name == "adamw_torch" and o.fused:
        return "adamw_torch_fused"
    return name


def _fmt(value: float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def training_args(job: Job, paths: RunPaths | None = None) -> list[str]:
    """The entrypoint's flags for this Job (run ``check`` first)."""
    spec = job.spec
    t = spec.training
    p = paths or default_paths(job)
    args = ["--model_name_or_path", p.model_id]
    if p.tokenizer is not None:
        args += ["--tokenizer_name_or_path", _tokenizer_dir(p.tokenizer)]
    args += _model_args(job)
    args += data_args(job, p.train)
    args += [
        "--max_seq_length", str(job.max_seq_len),
        "--per_device_train_batch_size", str(job.micro_batch_size),
        "--gradient_accumulation_steps", str(job.gradient_accumulation_steps),
        "--learning_rate", _fmt(t.learning_rate),
        "--weight_decay", _fmt(t.optimizer.weight_decay),
    ]
    if t.max_steps is not None:
        args += ["--max_steps", str(t.max_steps)]
    else:
        args += ["--num_train_epochs", str(t.epochs or 1)]
    args += ["--lr_scheduler_type", t.scheduler.name]
    if t.scheduler.name in ("cosine", "cosine_with_restarts") and t.scheduler.num_cycles != 0.5:
        args += ["--lr_scheduler_kwargs", json.dumps({"num_cycles": t.scheduler.num_cycles})]
    if job.warmup_steps is not None:
        args += ["--warmup_steps", str(job.warmup_steps)]
    elif t.scheduler.warmup_ratio is not None:
        args += ["--warmup_ratio", _fmt(t.scheduler.warmup_ratio)]
    args += ["--optim", hf_optim(job)] + _optimizer_args(job)
    args += ["--max_grad_norm", _fmt(t.max_grad_norm) if t.max_grad_norm is not None else "0"]
    if t.seed is not None:
        args += ["--seed", str(t.seed)]
    if spec.model.dtype in ("bf16", "fp16"):
        args.append(f"--{spec.model.dtype}")
    if t.gradient_checkpointing and not uses_fsdp_checkpointing(job):
        args.append("--gradient_checkpointing")
    args += _peft_args(job)
    args += _eval_args(job) + _save_args(job)
    args += ["--output_dir", p.output_dir, "--logging_steps", str(t.logging.steps)]
    for key, value in spec.overrides.training_args.items():
        args += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    args += list(spec.entrypoint.args)
    return args


def _model_args(job: Job) -> list[str]:
    m = job.spec.model
    args: list[str] = []
    if m.revision is not None:
        args += ["--model_revision", m.revision]
    if m.attn_implementation is not None:
        args += ["--attn_implementation", m.attn_implementation]
    if m.trust_remote_code:
        args.append("--trust_remote_code")
    if m.tokenizer.pad_token is not None:
        args += ["--pad_token", m.tokenizer.pad_token]
    if m.chat_template is not None:
        args += ["--chat_template", m.chat_template]
    return args


def _optimizer_args(job: Job) -> list[str]:
    o = job.spec.training.optimizer
    args: list[str] = []
    if o.betas != (0.9, 0.999):
        args += ["--adam_beta1", _fmt(o.betas[0]), "--adam_beta2", _fmt(o.betas[1])]
    if o.eps != 1e-8:
        args += ["--adam_epsilon", _fmt(o.eps)]
    if o.momentum != 0.0:
        args += ["--momentum", _fmt(o.momentum)]
    return args


def _eval_args(job: Job) -> list[str]:
    t = job.spec.training
    ev = t.evaluation
    if ev.strategy == "no":
        return []
    args = ["--eval_strategy", ev.strategy]
    if ev.strategy == "steps":
        args += ["--eval_steps", str(ev.steps or t.logging.steps)]
    args += ["--per_device_eval_batch_size", str(ev.batch_size or job.micro_batch_size)]
    es = t.early_stopping
    if es is not None:
        args += ["--early_stopping_patience", str(es.patience),
                 "--early_stopping_threshold", _fmt(es.threshold),
                 "--early_stopping_metric", es.metric]
    return args


def _save_args(job: Job) -> list[str]:
    c = job.spec.training.checkpointing
    args = ["--save_strategy", c.strategy]
    if c.strategy == "steps":
        args += ["--save_steps", str(c.steps or 500)]
    if c.total_limit is not None:
        args += ["--save_total_limit", str(c.total_limit)]
    if c.resume_from is not None:
        args += ["--resume_from_checkpoint",
                 local_path(c.resume_from) if "://" in c.resume_from else c.resume_from]
    return args


def _peft_args(job: Job) -> list[str]:
    m = job.spec.method
    if m.kind == "full":
        return ["--peft_method", "none"]
    args = ["--peft_method", m.kind]
    if m.kind == "ia3":
        ia3 = m.ia3 or IA3()
        return args + ["--ia3_target_modules", *ia3.target_modules,
                       "--ia3_feedforward_modules", *ia3.feedforward_modules]
    if m.kind == "prompt_tuning":
        pt = m.prompt_tuning or PromptTuning()
        args += ["--num_virtual_tokens", str(pt.num_virtual_tokens)]
        if pt.init == "text" and pt.init_text:
            args += ["--prompt_tuning_init_text", pt.init_text]
        return args
    lora = m.lora_settings
    modules = list(job.lora_modules) + (["lm_head"] if lora.output else [])
    args += ["--lora_r", str(lora.rank), "--lora_alpha", _fmt(float(lora.alpha)),
             "--lora_dropout", _fmt(float(lora.dropout)), "--target_modules", *modules]
    if lora.bias != "none":
        args += ["--lora_bias", lora.bias]
    if lora.modules_to_save:
        args += ["--modules_to_save", *lora.modules_to_save]
    if lora.init_weights != "default":
        args += ["--init_lora_weights", lora.init_weights]
    q = m.quantization
    if m.kind == "qlora" and q is not None:
        if q.bits == 8:
            return args + ["--load_in_8bit"]
        args += ["--load_in_4bit", "--bnb_4bit_quant_type", q.quant_type,
                 "--bnb_4bit_compute_dtype", BNB_DTYPES[q.compute_dtype],
                 "--bnb_4bit_quant_storage", BNB_DTYPES[q.storage_dtype],
                 "--torch_dtype", BNB_DTYPES[q.compute_dtype]]
        if q.double_quant:
            args.append("--bnb_4bit_use_double_quant")
    return args


def entry_argv(job: Job) -> list[str]:
    e = job.spec.entrypoint
    if e.script is not None:
        return [e.script]
    return ["-m", e.module or DEFAULT_ENTRYPOINT]


def launch_words(job: Job, paths: RunPaths | None = None,
                 config: shell.Word = CONFIG_FILE) -> list[shell.Word]:
    """``accelerate launch`` with the generated config file, as shell words.

    Multi-node runs need ``--machine_rank`` and ``--main_process_ip`` per node; the command
    references ``${NODE_RANK}`` and ``${MASTER_ADDR}`` for the platform (or the shell) to fill.
    """
    words: list[shell.Word] = ["accelerate", "launch", "--config_file", config]
    if job.world_size > 1:
        words += ["--num_processes", str(job.world_size)]
    if job.nodes > 1:
        words += ["--num_machines", str(job.nodes), "--machine_rank", shell.EnvRef("NODE_RANK"),
                  "--main_process_ip", shell.EnvRef("MASTER_ADDR")]
    return words + entry_argv(job) + training_args(job, paths)


def _env(job: Job) -> dict[str, str]:
    return {"ACCELERATE_USE_CPU": "true"} if job.device == "cpu" and job.world_size > 1 else {}


def launch(job: Job, paths: RunPaths | None = None, config_path: str = CONFIG_FILE) -> Launch:
    """``launch_words`` as a plain argv for platforms, with the config file's text."""
    argv = shell.plain(launch_words(job, paths, config_path))
    return Launch(argv=argv, files={CONFIG_FILE: config_text(job)}, env=_env(job))


def config_text(job: Job) -> str:
    head = f"# Generated by ftspec from spec {job.spec_id} (hash {job.spec_hash}); do not edit.\n"
    return head + dump_config(config_dict(job))


def command_text(job: Job) -> str:
    words = launch_words(job, config=shell.ScriptFile(CONFIG_FILE))
    body = " \\\n    ".join(_group([shell.quote(w) for w in words]))
    return shell.script(
        [f"Generated by ftspec from spec {job.spec_id} (hash {job.spec_hash}); do not edit."],
        [f"exec {body}"], env=_env(job))


def _group(parts: list[str]) -> list[str]:
    """One flag and its values per line, for review."""
    out: list[str] = []
    for part in parts:
        if out and not part.startswith("--") and part != "-m":
            out[-1] += " " + part
        else:
            out.append(part)
    return out


class AccelerateTarget:
    name = "accelerate"

    def check(self, job: Job) -> list[Diagnostic]:
        from ftspec.targets.accelerate_checks import check

        return check(job)

    def compile(self, job: Job) -> list[Artifact]:
        return [
            Artifact(CONFIG_FILE, "config", config_text(job), obj=config_dict(job)),
            Artifact(COMMAND_FILE, "command", command_text(job), obj=launch_data(launch(job))),
        ]


TARGET = AccelerateTarget()


TOKENIZER_FILES = (".model", ".json", ".txt", ".tiktoken")


def _tokenizer_dir(path: str) -> str:
    """Hugging Face tokenizers load from a folder: a tokenizer file means its folder
    (torchtune takes the file itself, e.g. a sentencepiece ``tokenizer.model``)."""
    if path.endswith(TOKENIZER_FILES):
        parent = path.rsplit("/", 1)[0] if "/" in path else "."
        return parent
    return path
