"""Command-line flags of the HF SFT entrypoint (names follow transformers / TRL where they exist)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_PROMPT_TEMPLATE = (
    "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n"
)
DEFAULT_COMPLETION_TEMPLATE = "{output}"
FORMATS = ("instruct", "completion", "text", "chat")
OPTIMIZERS = (
    "adamw_torch", "adamw_torch_fused", "adam", "sgd", "rmsprop", "adafactor",
    "adamw_8bit", "adamw_bnb_8bit", "paged_adamw_8bit", "paged_adamw_32bit", "lion", "lion_32bit",
)
PEFT_METHODS = ("none", "lora", "dora", "qlora", "gptq_lora", "ia3", "prompt_tuning")
STRATEGIES = ("no", "steps", "epoch")
DTYPES = ("auto", "bfloat16", "float16", "float32")


def _json_list(text: str) -> list[dict[str, Any]]:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise argparse.ArgumentTypeError("expected a JSON list of objects")
    return value


def _json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def _data_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data (one source: --train_file or --dataset_name; or --mixture)")
    g.add_argument("--train_file", type=Path, help="local JSONL (or JSON list) file")
    g.add_argument("--dataset_name", help="Hugging Face Hub dataset id, loaded with `datasets`")
    g.add_argument("--dataset_subset", help="hub dataset configuration")
    g.add_argument("--train_split", default="train")
    g.add_argument("--dataset_format", choices=FORMATS, default="instruct")
    g.add_argument("--column_map", type=_json_object, default={},
                   help="JSON object: template placeholder -> column name")
    g.add_argument("--prompt_template", help=f"default (instruct): {DEFAULT_PROMPT_TEMPLATE!r}")
    g.add_argument("--completion_template",
                   help=f"default (instruct): {DEFAULT_COMPLETION_TEMPLATE!r}")
    g.add_argument("--prompt_func", help="module:function(row) -> prompt string")
    g.add_argument("--completion_func", help="module:function(row) -> completion string")
    g.add_argument("--dataset_text_field", default="text", help="text format: the column")
    g.add_argument("--conversation_column", default="messages", help="chat format: the column")
    g.add_argument("--new_system_prompt", help="set this system prompt on every example")
    g.add_argument("--response_template",
                   help="loss only on the tokens after this marker (completion-only loss)")
    g.add_argument("--train_on_input", action="store_true", help="also train on prompt tokens")
    g.add_argument("--mixture", type=_json_list,
                   help='JSON list of sources: [{"source": "hf://org/name" or a file, '
                   '"proportion": 0.7, "split": ..., "format": ..., ...}]')
    g.add_argument("--mixture_strategy", choices=("first_exhausted", "all_exhausted"),
                   default="first_exhausted")
    g.add_argument("--no_shuffle", action="store_true", help="keep the data order")
    g.add_argument("--packing", action="store_true",
                   help="concatenate examples and cut them into --max_seq_length sequences")
    g.add_argument("--dataloader_num_workers", type=int, default=0)
    g.add_argument("--max_seq_length", type=int, default=512)
    v = p.add_argument_group("validation")
    v.add_argument("--validation_file", type=Path)
    v.add_argument("--validation_dataset_name", help="hub id (default: --dataset_name)")
    v.add_argument("--validation_split", help="split of the (validation) hub dataset")
    v.add_argument("--validation_source", type=_json_object,
                   help="JSON source object, when validation data renders differently")
    v.add_argument("--validation_split_ratio", type=float, default=0.0,
                   help="hold out this share of the training examples")
    v.add_argument("--eval_strategy", choices=STRATEGIES, default="no")
    v.add_argument("--eval_steps", type=int, default=0)
    v.add_argument("--per_device_eval_batch_size", type=int, default=8)
    v.add_argument("--early_stopping_patience", type=int, default=0, help="0: never stop early")
    v.add_argument("--early_stopping_threshold", type=float, default=0.0)
    v.add_argument("--early_stopping_metric", choices=("eval_loss",), default="eval_loss")


def _training_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("training")
    g.add_argument("--per_device_train_batch_size", type=int, default=8)
    g.add_argument("--gradient_accumulation_steps", type=int, default=1)
    g.add_argument("--learning_rate", type=float, default=5e-5)
    g.add_argument("--weight_decay", type=float, default=0.0)
    g.add_argument("--adam_beta1", type=float, default=0.9)
    g.add_argument("--adam_beta2", type=float, default=0.999)
    g.add_argument("--adam_epsilon", type=float, default=1e-8)
    g.add_argument("--momentum", type=float, default=0.0, help="sgd / rmsprop")
    g.add_argument("--max_grad_norm", type=float, default=1.0, help="0: no clipping")
    g.add_argument("--num_train_epochs", type=float, default=1.0)
    g.add_argument("--max_steps", type=int, default=-1, help="> 0 overrides --num_train_epochs")
    g.add_argument("--lr_scheduler_type", default="linear",
                   help="any name transformers.get_scheduler accepts (linear, cosine, ...)")
    g.add_argument("--lr_scheduler_kwargs", type=_json_object, default={},
                   help='JSON, e.g. {"num_cycles": 1}')
    g.add_argument("--warmup_steps", type=int, default=0)
    g.add_argument("--warmup_ratio", type=float, default=0.0, help="used when --warmup_steps is 0")
    g.add_argument("--optim", choices=OPTIMIZERS, default="adamw_torch")
    g.add_argument("--seed", type=int, default=42)
    precision = g.add_mutually_exclusive_group()
    precision.add_argument("--bf16", action="store_true")
    precision.add_argument("--fp16", action="store_true")
    g.add_argument("--gradient_checkpointing", action="store_true")
    g.add_argument("--save_strategy", choices=STRATEGIES, default="no")
    g.add_argument("--save_steps", type=int, default=0)
    g.add_argument("--save_total_limit", type=int, default=0, help="0: keep all checkpoints")
    g.add_argument("--resume_from_checkpoint", type=Path,
                   help="a checkpoint-N folder this entrypoint wrote")
    g.add_argument("--output_dir", required=True, type=Path)
    g.add_argument("--logging_steps", type=int, default=1)
    g.add_argument("--report_world_size", type=Path, metavar="FILE")


def _model_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model and method")
    g.add_argument("--model_name_or_path", required=True)
    g.add_argument("--tokenizer_name_or_path", help="defaults to --model_name_or_path")
    g.add_argument("--model_revision")
    g.add_argument("--torch_dtype", choices=DTYPES, default="float32",
                   help="dtype the weights load in (mixed precision comes from --bf16/--fp16)")
    g.add_argument("--attn_implementation", choices=("eager", "sdpa", "flash_attention_2"))
    g.add_argument("--trust_remote_code", action="store_true")
    g.add_argument("--pad_token", help="override the tokenizer's padding token")
    g.add_argument("--chat_template", help="override the tokenizer's chat template (Jinja)")
    g.add_argument("--peft_method", choices=PEFT_METHODS, default="none")
    g.add_argument("--lora_r", type=int, default=8)
    g.add_argument("--lora_alpha", type=float, default=16.0)
    g.add_argument("--lora_dropout", type=float, default=0.0)
    g.add_argument("--lora_bias", choices=("none", "all", "lora_only"), default="none")
    g.add_argument("--init_lora_weights", choices=("default", "gaussian", "pissa", "olora"),
                   default="default")
    g.add_argument("--target_modules", nargs="+", default=["q_proj", "v_proj"],
                   help="module names, or the single value all-linear")
    g.add_argument("--modules_to_save", nargs="+", default=[])
    g.add_argument("--ia3_target_modules", nargs="+", default=["k_proj", "v_proj", "down_proj"])
    g.add_argument("--ia3_feedforward_modules", nargs="+", default=["down_proj"])
    g.add_argument("--num_virtual_tokens", type=int, default=20)
    g.add_argument("--prompt_tuning_init_text", help="initialize the virtual tokens from text")
    g.add_argument("--load_in_4bit", action="store_true", help="bitsandbytes 4-bit base model")
    g.add_argument("--load_in_8bit", action="store_true", help="bitsandbytes 8-bit base model")
    g.add_argument("--bnb_4bit_quant_type", choices=("nf4", "fp4"), default="nf4")
    g.add_argument("--bnb_4bit_use_double_quant", action="store_true")
    g.add_argument("--bnb_4bit_compute_dtype", choices=DTYPES[1:], default="bfloat16")
    g.add_argument("--bnb_4bit_quant_storage", choices=("uint8", *DTYPES[1:]), default="uint8")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m ftspec.targets.entrypoints.hf_sft",
        description="Supervised fine-tuning of a Hugging Face causal LM under accelerate.")
    _model_flags(p)
    _data_flags(p)
    _training_flags(p)
    args = p.parse_args(argv)
    sources = [args.train_file is not None, args.dataset_name is not None,
               args.mixture is not None]
    if sum(sources) != 1:
        p.error("give exactly one of --train_file, --dataset_name, --mixture")
    if args.load_in_4bit and args.load_in_8bit:
        p.error("--load_in_4bit and --load_in_8bit exclude each other")
    if args.prompt_template is not None and args.prompt_func is not None:
        p.error("--prompt_template and --prompt_func exclude each other")
    if args.completion_template is not None and args.completion_func is not None:
        p.error("--completion_template and --completion_func exclude each other")
    if args.eval_strategy == "steps" and args.eval_steps <= 0:
        p.error("--eval_strategy steps needs --eval_steps > 0")
    if args.save_strategy == "steps" and args.save_steps <= 0:
        p.error("--save_strategy steps needs --save_steps > 0")
    if args.early_stopping_patience > 0 and args.eval_strategy == "no":
        p.error("--early_stopping_patience needs an --eval_strategy")
    if not 0.0 <= args.validation_split_ratio < 1.0:
        p.error("--validation_split_ratio must be in [0, 1)")
    return args
