"""Supervised fine-tuning of a Hugging Face causal LM: ftspec's default accelerate entrypoint.

Run it under accelerate (or alone, as one process):

    accelerate launch --config_file accelerate.yaml -m ftspec.targets.entrypoints.hf_sft \\
        --model_name_or_path MODEL_DIR --train_file train.jsonl --output_dir OUT \\
        --peft_method lora --lora_r 8 --max_steps 10

Data (``sources``, ``render``, ``mixing``, ``features``, ``pipeline``): a local JSONL file
(``--train_file``) or a Hub dataset (``--dataset_name``, ``--dataset_subset``,
``--train_split``, read with ``datasets``), or a ``--mixture`` of several by proportion.
Formats: instruct / completion (prompt and completion templates over the row's columns through
``--column_map``, or ``module:function`` builders), text (``--dataset_text_field``), chat
(the tokenizer's chat template). The loss covers the completion only, unless
``--train_on_input``; ``--response_template`` moves the split to a marker. Validation data:
``--validation_file`` / ``--validation_split`` / ``--validation_source`` or
``--validation_split_ratio``; ``--eval_strategy`` logs the eval loss and
``--early_stopping_patience`` stops on it.

Training (``loop``, ``optim``, ``model``): a plain PyTorch loop under
``accelerate.Accelerator`` (DDP / FSDP / DeepSpeed / mixed precision come from the accelerate
config) with gradient clipping, checkpoints (``--save_strategy``), torch / Adafactor /
bitsandbytes optimizers, any transformers schedule, and a PEFT method (LoRA, DoRA, QLoRA on a
bitsandbytes 4-bit base, IA3, prompt tuning). Output on the main process:

    world_size=2
    step=1 loss=5.7211 lr=1.0e-04        one line per optimizer step (every --logging_steps)
    step=2 eval_loss=5.6012              after each evaluation
    saved to OUT

`--report_world_size FILE` makes the main process write `{"world_size": N, "ranks_seen": [...],
"params_in_sync": bool}` gathered from every process, so a caller can check the processes really
trained together (`params_in_sync` compares a checksum of each rank's trainable weights: True
under DDP; with FSDP / ZeRO sharding each rank holds a different shard). At the end the model
(or the adapter) and tokenizer go to `--output_dir`.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Sequence
from typing import Any

from ftspec.targets.entrypoints.hf_sft.args import parse_args
from ftspec.targets.entrypoints.hf_sft.pipeline import build_data, load_examples

__all__ = ["build_data", "load_examples", "main", "parse_args", "train"]


def train(args: argparse.Namespace) -> None:
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from ftspec.targets.entrypoints.hf_sft.features import collate, pad_id
    from ftspec.targets.entrypoints.hf_sft.loop import Loop, log, report_world_size, save
    from ftspec.targets.entrypoints.hf_sft.model import build_model, load_tokenizer
    from ftspec.targets.entrypoints.hf_sft.optim import (
        build_optimizer,
        build_scheduler,
        total_steps,
    )

    precision = "bf16" if args.bf16 else "fp16" if args.fp16 else None  # None: launcher's choice
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps,
                              mixed_precision=precision)
    log(accelerator, f"world_size={accelerator.num_processes}")
    set_seed(args.seed)

    tokenizer = load_tokenizer(args)
    pad = pad_id(tokenizer)
    data = build_data(args, tokenizer)
    for note in data.notes:
        log(accelerator, note)
    if args.eval_strategy != "no" and not data.eval:
        raise SystemExit("--eval_strategy needs validation data: --validation_file, "
                         "--validation_split, --validation_source or --validation_split_ratio")

    def loader(rows: list[Any], batch: int, shuffle: bool) -> Any:
        return torch.utils.data.DataLoader(
            rows,  # type: ignore[arg-type]  # a list is a map-style dataset
            batch_size=batch, shuffle=shuffle,
            collate_fn=functools.partial(collate, pad=pad),
            num_workers=args.dataloader_num_workers,
            generator=torch.Generator().manual_seed(args.seed))

    train_loader = loader(data.train, args.per_device_train_batch_size, not args.no_shuffle)
    eval_loader = loader(data.eval or data.train[:1], args.per_device_eval_batch_size, False)
    device_index = accelerator.local_process_index if torch.cuda.is_available() else None
    model = build_model(args, device_index)
    optimizer = build_optimizer(args, model)
    model, optimizer, train_loader, eval_loader = accelerator.prepare(
        model, optimizer, train_loader, eval_loader)
    steps = total_steps(args, len(train_loader))
    # Not passed to prepare(): accelerate would advance it num_processes times per step.
    scheduler = build_scheduler(args, optimizer, steps)
    accelerator.register_for_checkpointing(scheduler)
    Loop(accelerator, args, model, optimizer, scheduler, train_loader, eval_loader, steps).run()

    if args.report_world_size:
        report_world_size(accelerator, model, args.report_world_size)
    save(accelerator, model, tokenizer, args.output_dir)


def main(argv: Sequence[str] | None = None) -> None:
    train(parse_args(argv))
