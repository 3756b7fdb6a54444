"""prepare.json's ``trainable``: LoRA+ learning rates and layer freezing, which TRL's
``SFTTrainer`` has no argument for.

- ``unfrozen_parameters``: regular expressions matched at the start of each parameter name of
  the model the trainer trains (PEFT's names with an adapter); every other parameter is
  frozen. Applied once the trainer has built (and PEFT-wrapped) the model, before accelerate
  wraps it, so DDP / FSDP see the final ``requires_grad``.
- ``loraplus_lr_ratio``: the optimizer is PEFT's ``create_loraplus_optimizer`` over the
  optimizer class and arguments the Trainer would build from ``optim`` (so adamw, adamw_8bit,
  ... stay what sft.yaml says), B matrices at ``learning_rate`` x ratio, weight decay as
  ``weight_decay``. The scheduler is the Trainer's own, over these groups.
"""

from __future__ import annotations

from typing import Any

from ftspec.runtime.unfrozen import compile_patterns, unfrozen


def after_init(trainer: Any, entry: dict[str, Any] | None) -> list[str]:
    """Freeze what the patterns leave out (before the trainer wraps the model); the notes
    the entrypoint prints."""
    if not entry:
        return []
    notes = []
    patterns = entry.get("unfrozen_parameters")
    if patterns:
        total = sum(1 for _ in trainer.model.parameters())
        kept = freeze(trainer.model, list(patterns))
        notes.append(f"[ftspec] unfrozen_parameters: {kept} of {total} parameter tensors "
                     "train")
    if "loraplus_lr_ratio" in entry:
        notes.append(f"[ftspec] LoRA+: B matrices at {entry['loraplus_lr_ratio']} x the "
                     "learning rate")
    return notes


def freeze(model: Any, patterns: list[str]) -> int:
    """Freeze every parameter whose name matches none of ``patterns``; the count of
    parameters left trainable (a spec freezing them all is refused: nothing would train)."""
    compiled = compile_patterns(patterns)
    trainable = 0
    for name, param in model.named_parameters():
        keep = unfrozen(name, compiled)
        param.requires_grad_(keep and param.is_floating_point())  # no grad on int8/4-bit
        trainable += int(param.requires_grad)
    if trainable == 0:
        names = [n for n, _ in model.named_parameters()][:3]
        raise SystemExit(f"method.unfrozen_parameters {patterns} match no trainable parameter "
                         f"(the model's names look like {names}): nothing would train")
    return trainable


def trainer_class(entry: dict[str, Any] | None, base: type) -> type:
    """``base`` (SFTTrainer), or a subclass whose optimizer is LoRA+'s."""
    if not entry or "loraplus_lr_ratio" not in entry:
        return base
    ratio = float(entry["loraplus_lr_ratio"])
    embedding = entry.get("loraplus_lr_embedding")

    parent: Any = base

    class LoraPlusTrainer(parent):  # type: ignore[misc]
        def create_optimizer(self, model: Any = None) -> Any:
            if getattr(self, "optimizer", None) is None:
                from peft.optimizers import create_loraplus_optimizer

                target = self.model if model is None else model
                cls, kwargs = self.get_optimizer_cls_and_kwargs(self.args, target)
                kwargs = dict(kwargs)
                lr = kwargs.pop("lr", self.args.learning_rate)
                if embedding is not None:
                    kwargs["loraplus_lr_embedding"] = float(embedding)
                self.optimizer = create_loraplus_optimizer(
                    target, cls, lr=lr, loraplus_lr_ratio=ratio,
                    loraplus_weight_decay=self.args.weight_decay, **kwargs)
            return self.optimizer

    return LoraPlusTrainer
