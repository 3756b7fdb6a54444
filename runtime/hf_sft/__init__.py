"""Data preparation for TRL's ``SFTTrainer``: ftspec's accelerate entrypoint where ``trl sft``
cannot express the spec.

    accelerate launch --config_file accelerate.yaml -m ftspec.runtime.hf_sft \\
        --config sft.yaml --prepare prepare.json

``sft.yaml`` is TRL's own config (read with TRL's ``TrlParser`` and the argument classes of
``trl sft``); ``prepare.json`` says what TRL's CLI cannot: how rows render (``sources``,
``render``: templates over the row's columns, the Alpaca layout, chat through the chat
template), a mixture by proportion (``mixing``), held-out validation data, no shuffling, a
tokenizer apart from the model, early stopping, the PEFT methods ``ModelConfig`` lacks
(``peft``), LoRA+ and layer freezing (``trainable``). The rows become ``prompt`` /
``completion`` text and everything else — tokenizing, masking, packing, the loop,
evaluation, checkpoints, resume, ``report_to``, logging — is ``SFTTrainer``'s. There is no training loop here: this module only builds datasets and calls
the trainer, as TRL's own ``trl/scripts/sft.py`` does.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.runtime.hf_sft.pipeline import Plan, build_data, load_examples

__all__ = ["Plan", "build_data", "load_examples", "main"]


@dataclass
class PrepareArguments:
    """The one argument this entrypoint adds to ``trl sft``'s."""

    prepare: str = field(default="", metadata={"help": "prepare.json written by ftspec"})


def _print_cuda_peak() -> None:
    """The CUDA allocator's peak of this process, for ftspec's measured properties
    (``reconciler.measured``); nothing on CPU."""
    import torch

    if torch.cuda.is_available():
        peak = torch.cuda.max_memory_allocated()
        print(f"[ftspec] cuda_max_allocated_bytes={peak}", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    from transformers import TrainerCallback
    from trl.scripts.utils import DatasetMixtureConfig, ScriptArguments, TrlParser
    from trl.trainer.model_config import ModelConfig
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer
    from trl.trainer.utils import get_peft_config, get_quantization_config

    # the argument classes of `trl sft` (trl/scripts/sft.py), plus --prepare
    classes: Any = (ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig,
                    PrepareArguments)
    parser = TrlParser(classes)
    _, training_args, model_args, _, prep = parser.parse_args_and_config(
        args=list(argv) if argv is not None else None)
    if not prep.prepare:
        raise SystemExit("--prepare FILE is required (prepare.json from `ftspec compile`)")
    plan = Plan.from_json(json.loads(Path(prep.prepare).read_text()))
    training_args.model_init_kwargs = {
        "revision": model_args.model_revision, "dtype": model_args.dtype,
        "attn_implementation": model_args.attn_implementation,
        "trust_remote_code": training_args.trust_remote_code,
        **(training_args.model_init_kwargs or {})}
    tokenizer = _tokenizer(plan, model_args, training_args)
    data = build_data(plan, tokenizer, training_args.seed)
    for note in data.notes:
        print(note, flush=True)
    callbacks: list[TrainerCallback] = []
    if plan.early_stopping is not None:
        from transformers import EarlyStoppingCallback

        callbacks.append(EarlyStoppingCallback(
            early_stopping_patience=plan.early_stopping["patience"],
            early_stopping_threshold=plan.early_stopping["threshold"]))
    if plan.stop is not None:
        from ftspec.runtime.hf_sft.stop import stop_callback

        callbacks.append(stop_callback(plan.stop))
        training_args.include_num_input_tokens_seen = "non_padding"  # the window's tokens
    from ftspec.runtime.hf_sft.peft import peft_config
    from ftspec.runtime.hf_sft.trainable import after_init, trainer_class

    trainer = trainer_class(plan.trainable, SFTTrainer)(
        model=model_args.model_name_or_path, args=training_args,
        train_dataset=data.train,
        eval_dataset=data.eval if training_args.eval_strategy != "no" else None,
        processing_class=tokenizer,
        peft_config=peft_config(plan.peft, model_args) or get_peft_config(model_args),
        quantization_config=get_quantization_config(model_args),
        callbacks=callbacks)
    from ftspec.runtime.hf_sft.compat import moe_expert_count

    alias = moe_expert_count(trainer.model)
    if alias is not None:
        print(f"[ftspec] {alias}", flush=True)
    if _multimodal(plan):
        from ftspec.runtime.hf_sft.vision import check_lengths

        check_lengths(trainer, training_args.max_length)
    for line in after_init(trainer, plan.trainable):
        print(line, flush=True)
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    _print_cuda_peak()
    trainer.save_model(training_args.output_dir)
    if trainer.accelerator.is_main_process:
        tokenizer.save_pretrained(training_args.output_dir)
    trainer.accelerator.print(f"saved to {training_args.output_dir}")
    gloo = _uses_gloo()
    end = getattr(trainer, "end", None)
    if callable(end):  # transformers >= 5.18: finish trackers, destroy the process group
        end()
    if gloo:
        # Seen with torch 2.13 on CPU (gloo), 2 processes: at interpreter exit the DDP
        # reducer's ~ProcessGroupGloo joins gloo's run-loop thread while holding the GIL, and
        # that thread waits for the GIL to free an all-gather's tensor: a deadlock after all
        # the work is done and saved. Leave without the teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _uses_gloo() -> bool:
    import torch.distributed as dist

    return bool(dist.is_available() and dist.is_initialized()
                and dist.get_backend() == "gloo")


def _multimodal(plan: Plan) -> bool:
    return any(s.format == "multimodal" for s in plan.train)


def _tokenizer(plan: Plan, model_args: Any, training_args: Any) -> Any:
    """The tokenizer, or for multimodal data the model's processor (its tokenizer inside)."""
    from transformers import AutoProcessor, AutoTokenizer

    loader: Any = AutoProcessor if _multimodal(plan) else AutoTokenizer
    tokenizer = loader.from_pretrained(
        plan.tokenizer or model_args.model_name_or_path, revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code)
    text = getattr(tokenizer, "tokenizer", tokenizer)
    if plan.pad_token is not None:
        text.pad_token = plan.pad_token
    if plan.chat_template is not None:  # inline Jinja (a file or folder stays TRL's)
        tokenizer.chat_template = plan.chat_template
    return tokenizer
