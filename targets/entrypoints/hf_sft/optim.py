"""Optimizer (torch, transformers' Adafactor, bitsandbytes) and learning-rate schedule."""

from __future__ import annotations

import argparse
import math
from typing import Any

from ftspec.targets.entrypoints.hf_sft.model import require_bitsandbytes

BNB_OPTIMIZERS = {
    "adamw_8bit": "AdamW8bit", "adamw_bnb_8bit": "AdamW8bit",
    "paged_adamw_8bit": "PagedAdamW8bit", "paged_adamw_32bit": "PagedAdamW32bit",
    "lion": "Lion", "lion_32bit": "Lion",
}


def build_optimizer(args: argparse.Namespace, model: Any) -> Any:
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    lr, wd = args.learning_rate, args.weight_decay
    betas = (args.adam_beta1, args.adam_beta2)
    name = args.optim
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=wd, momentum=args.momentum)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, weight_decay=wd, momentum=args.momentum,
                                   eps=args.adam_epsilon)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=wd, betas=betas,
                                eps=args.adam_epsilon)
    if name == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(params,  # type: ignore[no-untyped-call]
                         lr=lr, weight_decay=wd, scale_parameter=False,
                         relative_step=False, warmup_init=False)
    if name in BNB_OPTIMIZERS:
        bnb = require_bitsandbytes(f"--optim {name}")
        cls = getattr(bnb.optim, BNB_OPTIMIZERS[name])
        if name.startswith("lion"):
            return cls(params, lr=lr, weight_decay=wd, betas=betas)
        return cls(params, lr=lr, weight_decay=wd, betas=betas, eps=args.adam_epsilon)
    return torch.optim.AdamW(params, lr=lr, weight_decay=wd, betas=betas, eps=args.adam_epsilon,
                             fused=name == "adamw_torch_fused")


def total_steps(args: argparse.Namespace, batches_per_epoch: int) -> int:
    if args.max_steps > 0:
        return int(args.max_steps)
    accumulation: int = args.gradient_accumulation_steps
    epochs: float = args.num_train_epochs
    return max(1, math.ceil(epochs * math.ceil(batches_per_epoch / accumulation)))


def build_scheduler(args: argparse.Namespace, optimizer: Any, steps: int) -> Any:
    from transformers import get_scheduler

    warmup = args.warmup_steps or math.ceil(args.warmup_ratio * steps)
    try:
        return get_scheduler(args.lr_scheduler_type, optimizer, num_warmup_steps=warmup,
                             num_training_steps=steps,
                             scheduler_specific_kwargs=args.lr_scheduler_kwargs or None)
    except ValueError as err:
        raise SystemExit(f"--lr_scheduler_type {args.lr_scheduler_type}: {err}") from None
