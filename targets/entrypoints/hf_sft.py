"""Supervised fine-tuning of a Hugging Face causal LM: ftspec's default accelerate entrypoint.

Run it under accelerate (or alone, as one process):

    accelerate launch --config_file accelerate.yaml -m ftspec.targets.entrypoints.hf_sft \\
        --model_name_or_path MODEL_DIR --train_file train.jsonl --output_dir OUT \\
        --peft_method lora --lora_r 8 --max_steps 10

Data: a JSONL file, one object per line. Each row is rendered with `--prompt_template` and
`--completion_template` (`str.format` placeholders). `--column_map` is a JSON object mapping a
placeholder name to the file's column, e.g. '{"input": "question", "output": "answer"}';
placeholders without an entry read the column of the same name. The loss covers the completion
tokens only unless `--train_on_input` is given.

Training: a plain PyTorch loop under `accelerate.Accelerator` (DDP / FSDP / DeepSpeed / mixed
precision come from the accelerate config), optional LoRA through peft. Output on the main process:

    world_size=2
    step=1 loss=5.7211 lr=1.0e-04        one line per optimizer step (every --logging_steps)

`--report_world_size FILE` makes the main process write `{"world_size": N, "ranks_seen": [...],
"params_in_sync": bool}` gathered from every process, so a caller can check the processes really
trained together. At the end the model (or the LoRA adapter) and tokenizer go to `--output_dir`.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from accelerate import Accelerator

IGNORE_INDEX = -100
DEFAULT_PROMPT_TEMPLATE = "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n"
DEFAULT_COMPLETION_TEMPLATE = "{output}"
OPTIMIZERS = ("adamw_torch", "adamw_torch_fused", "sgd")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model_name_or_path", required=True)
    p.add_argument("--tokenizer_name_or_path", help="defaults to --model_name_or_path")
    p.add_argument("--train_file", required=True, type=Path, help="JSONL, one example per line")
    p.add_argument("--column_map", type=json.loads, default={},
                   help="JSON object: template placeholder -> column name")
    p.add_argument("--prompt_template", default=DEFAULT_PROMPT_TEMPLATE)
    p.add_argument("--completion_template", default=DEFAULT_COMPLETION_TEMPLATE)
    p.add_argument("--train_on_input", action="store_true", help="also train on prompt tokens")
    p.add_argument("--max_seq_length", type=int, default=512)
    p.add_argument("--per_device_train_batch_size", type=int, default=8)
    p.add_argument("--gradient_accumulation_steps", type=int, default=1)
    p.add_argument("--learning_rate", type=float, default=5e-5)
    p.add_argument("--weight_decay", type=float, default=0.0)
    p.add_argument("--num_train_epochs", type=float, default=1.0)
    p.add_argument("--max_steps", type=int, default=-1, help="> 0 overrides --num_train_epochs")
    p.add_argument("--lr_scheduler_type", default="linear",
                   help="any name transformers.get_scheduler accepts (linear, cosine, constant...)")
    p.add_argument("--warmup_steps", type=int, default=0)
    p.add_argument("--warmup_ratio", type=float, default=0.0, help="used when --warmup_steps is 0")
    p.add_argument("--optim", choices=OPTIMIZERS, default="adamw_torch")
    p.add_argument("--seed", type=int, default=42)
    precision = p.add_mutually_exclusive_group()
    precision.add_argument("--bf16", action="store_true")
    precision.add_argument("--fp16", action="store_true")
    p.add_argument("--gradient_checkpointing", action="store_true")
    p.add_argument("--peft_method", choices=("none", "lora"), default="none")
    p.add_argument("--lora_r", type=int, default=8)
    p.add_argument("--lora_alpha", type=float, default=16.0)
    p.add_argument("--lora_dropout", type=float, default=0.0)
    p.add_argument("--target_modules", nargs="+", default=["q_proj", "v_proj"],
                   help="module names, or the single value all-linear")
    p.add_argument("--output_dir", required=True, type=Path)
    p.add_argument("--logging_steps", type=int, default=1)
    p.add_argument("--report_world_size", type=Path, metavar="FILE")
    return p.parse_args(argv)


def load_examples(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Read the JSONL file and render each row into a (prompt, completion) pair."""
    examples = []
    with args.train_file.open(encoding="utf-8") as lines:
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            fields = _Fields(row, args.column_map, f"{args.train_file}:{lineno}")
            examples.append((args.prompt_template.format_map(fields),
                             args.completion_template.format_map(fields)))
    if not examples:
        raise SystemExit(f"{args.train_file}: no examples")
    return examples


class _Fields(dict[str, str]):
    """Template lookup through the column map, with an error that names the row."""

    def __init__(self, row: dict[str, Any], column_map: dict[str, str], where: str) -> None:
        super().__init__()
        self._row, self._map, self._where = row, column_map, where

    def __missing__(self, key: str) -> str:
        column = self._map.get(key, key)
        if column not in self._row:
            raise SystemExit(f"{self._where}: template field {key!r} reads column {column!r}, "
                             f"which the row lacks (columns: {sorted(self._row)})")
        return str(self._row[column])


def tokenize(examples: list[tuple[str, str]], tokenizer: Any, max_len: int,
             train_on_input: bool) -> list[dict[str, list[int]]]:
    """Token ids with BOS/EOS; labels mask the prompt unless train_on_input."""
    features = []
    for prompt, completion in examples:
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        completion_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
        bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
        prompt_ids = bos + prompt_ids
        completion_ids = completion_ids + [tokenizer.eos_token_id]
        prompt_labels = prompt_ids if train_on_input else [IGNORE_INDEX] * len(prompt_ids)
        features.append({"input_ids": (prompt_ids + completion_ids)[:max_len],
                         "labels": (prompt_labels + completion_ids)[:max_len]})
    return features


def collate(batch: list[dict[str, list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    import torch

    width = max(len(f["input_ids"]) for f in batch)

    def padded(key: str, fill: int) -> torch.Tensor:
        return torch.tensor([f[key] + [fill] * (width - len(f[key])) for f in batch])

    lengths = [len(f["input_ids"]) for f in batch]
    mask = torch.tensor([[1] * n + [0] * (width - n) for n in lengths])
    return {"input_ids": padded("input_ids", pad_id), "labels": padded("labels", IGNORE_INDEX),
            "attention_mask": mask}


def build_model(args: argparse.Namespace) -> Any:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path)
    if args.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()  # LoRA: checkpointed blocks need grad-carrying inputs
    if args.peft_method == "lora":
        from peft import LoraConfig, get_peft_model

        targets = args.target_modules
        model = get_peft_model(model, LoraConfig(
            r=args.lora_r, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
            target_modules=targets[0] if targets == ["all-linear"] else targets,
            task_type="CAUSAL_LM"))
    return model


def build_optimizer(args: argparse.Namespace, model: Any) -> torch.optim.Optimizer:
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    if args.optim == "sgd":
        return torch.optim.SGD(params, lr=args.learning_rate, weight_decay=args.weight_decay)
    return torch.optim.AdamW(params, lr=args.learning_rate, weight_decay=args.weight_decay,
                             fused=args.optim == "adamw_torch_fused")


def total_steps(args: argparse.Namespace, batches_per_epoch: int) -> int:
    if args.max_steps > 0:
        return int(args.max_steps)
    per_epoch = math.ceil(batches_per_epoch / args.gradient_accumulation_steps)
    return max(1, math.ceil(args.num_train_epochs * per_epoch))


def train(args: argparse.Namespace) -> None:
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from transformers import AutoTokenizer, get_scheduler

    precision = "bf16" if args.bf16 else "fp16" if args.fp16 else None  # None: launcher's choice
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps,
                              mixed_precision=precision)
    accelerator.print(f"world_size={accelerator.num_processes}", flush=True)
    set_seed(args.seed)

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer_name_or_path or args.model_name_or_path)
    pad_id = next(i for i in (tokenizer.pad_token_id, tokenizer.unk_token_id,
                              tokenizer.eos_token_id) if i is not None)
    features = tokenize(load_examples(args), tokenizer, args.max_seq_length, args.train_on_input)
    loader = torch.utils.data.DataLoader(
        features, batch_size=args.per_device_train_batch_size, shuffle=True,
        collate_fn=lambda batch: collate(batch, pad_id),
        generator=torch.Generator().manual_seed(args.seed))
    model = build_model(args)
    optimizer = build_optimizer(args, model)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    steps = total_steps(args, len(loader))
    warmup = args.warmup_steps or math.ceil(args.warmup_ratio * steps)
    # Not passed to prepare(): accelerate would advance it num_processes times per step.
    scheduler = get_scheduler(args.lr_scheduler_type, optimizer, num_warmup_steps=warmup,
                              num_training_steps=steps)
    _train_loop(accelerator, model, optimizer, scheduler, loader, steps, args.logging_steps)

    if args.report_world_size:
        _report_world_size(accelerator, model, args.report_world_size)
    _save(accelerator, model, tokenizer, args.output_dir)


def _train_loop(accelerator: Accelerator, model: Any, optimizer: Any, scheduler: Any,
                loader: Any, steps: int, logging_steps: int) -> None:
    import torch

    model.train()
    step, epoch = 0, 0
    window: list[torch.Tensor] = []
    while step < steps:
        loader.set_epoch(epoch)
        for batch in loader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            window.append(loss.detach())
            if not accelerator.sync_gradients:
                continue
            scheduler.step()
            step += 1
            mean_loss = accelerator.reduce(torch.stack(window).mean(), reduction="mean")
            window.clear()
            if step % logging_steps == 0 or step == steps:
                lr = scheduler.get_last_lr()[0]
                accelerator.print(f"step={step} loss={mean_loss.item():.4f} lr={lr:.1e}",
                                  flush=True)
            if step == steps:
                break
        epoch += 1


def _report_world_size(accelerator: Accelerator, model: Any, path: Path) -> None:
    """Gather every rank's index and a checksum of its trainable weights onto the main process."""
    import torch

    checksum = sum(p.detach().double().sum() for p in model.parameters() if p.requires_grad)
    row = torch.tensor([[float(accelerator.process_index), float(checksum)]],
                       dtype=torch.float64, device=accelerator.device)
    rows = accelerator.gather(row).tolist()
    if accelerator.is_main_process:
        sums = [r[1] for r in rows]
        report = {"world_size": accelerator.num_processes,
                  "ranks_seen": sorted(int(r[0]) for r in rows),
                  "params_in_sync": max(sums) - min(sums) <= 1e-9 * max(1.0, abs(sums[0]))}
        path.write_text(json.dumps(report, sort_keys=True) + "\n")


def _save(accelerator: Accelerator, model: Any, tokenizer: Any, output_dir: Path) -> None:
    accelerator.wait_for_everyone()
    state = accelerator.get_state_dict(model)  # collective under FSDP / DeepSpeed
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(
            output_dir, state_dict=state, save_function=accelerator.save)
        tokenizer.save_pretrained(output_dir)
        accelerator.print(f"saved to {output_dir}", flush=True)
    accelerator.end_training()


def main(argv: Sequence[str] | None = None) -> None:
    train(parse_args(argv))


if __name__ == "__main__":
    main()
