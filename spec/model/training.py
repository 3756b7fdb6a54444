"""``training``: optimization hyperparameters and the training loop's schedule."""

from __future__ import annotations

from typing import Literal

from ftspec.spec.model.base import SpecModel
from pydantic import Field

OptimizerName = Literal[
    "adamw", "adam", "sgd", "adafactor", "adamw_8bit", "paged_adamw_8bit", "paged_adamw_32bit",
    "lion", "rmsprop",
]
SchedulerName = Literal[
    "cosine", "linear", "constant", "constant_with_warmup", "cosine_with_restarts",
    "polynomial", "inverse_sqrt",
]


class Optimizer(SpecModel):
    name: OptimizerName = Field(default="adamw", description="Optimizer.")
    weight_decay: float = Field(default=0.0, ge=0, description="Decoupled weight decay.")
    betas: tuple[float, float] = Field(
        default=(0.9, 0.999), description="Adam betas [beta1, beta2]."
    )
    eps: float = Field(default=1e-8, gt=0, description="Adam epsilon.")
    momentum: float = Field(default=0.0, ge=0, description="SGD momentum.")
    fused: bool = Field(default=False, description="Fused CUDA kernel (torch AdamW fused=True).")


class Scheduler(SpecModel):
    name: SchedulerName = Field(default="cosine", description="Learning-rate schedule.")
    warmup_steps: int | None = Field(
        default=None, ge=0, description="Linear warm-up steps (exclusive with warmup_ratio)."
    )
    warmup_ratio: float | None = Field(
        default=None, ge=0, lt=1, description="Warm-up as a fraction of all steps."
    )
    num_cycles: float = Field(default=0.5, gt=0, description="Cosine cycles (0.5 = half wave).")
    min_lr_ratio: float = Field(
        default=0.0, ge=0, lt=1,
        description="The cosine schedule's floor as a fraction of the peak learning rate "
        "(transformers' cosine_with_min_lr, min_lr_rate); 0 decays to zero.",
    )


class Logging(SpecModel):
    strategy: Literal["steps", "epoch", "no"] = Field(default="steps", description="When to log.")
    steps: int = Field(default=10, ge=1, description="Log every N optimizer steps.")
    report_to: list[Literal["tensorboard", "wandb", "mlflow", "jsonl"]] = Field(
        default_factory=list, description="Metric sinks."
    )


class Evaluation(SpecModel):
    strategy: Literal["no", "steps", "epoch"] = Field(default="no", description="When to evaluate.")
    steps: int | None = Field(default=None, ge=1, description="Evaluate every N steps (steps).")
    batch_size: int | None = Field(default=None, ge=1, description="Per-device eval batch size.")


class Checkpointing(SpecModel):
    strategy: Literal["no", "steps", "epoch"] = Field(default="epoch", description="When to save.")
    steps: int | None = Field(default=None, ge=1, description="Save every N steps (steps).")
    total_limit: int | None = Field(default=None, ge=1, description="Checkpoints kept.")
    resume_from: str | None = Field(
        default=None, description="Checkpoint folder to resume from: file://, pvc:// or a path "
        "on the machine that runs the launcher (restores weights, optimizer, scheduler, RNG). "
        "accelerate: a checkpoint-N folder; torchtune: an epoch_N folder of a LoRA run (the "
        "adapter; the recipe state lies beside it, in recipe_state/).")


class EarlyStopping(SpecModel):
    patience: int = Field(ge=1, description="Evaluations without improvement before stopping.")
    threshold: float = Field(default=0.0, ge=0, description="Minimum improvement that counts.")
    metric: str = Field(default="eval_loss", description="Metric watched.")


AUTO_STOP_METHODS: dict[str, tuple[float, float, int]] = {
    "WARMUP_60S_STABLE_120S_OR_10_STEPS": (60.0, 120.0, 10),
}
"""The SFTTrainer actuator's named auto-stop methods -> (warm-up seconds, stable seconds,
stable optimizer steps)."""


class Stop(SpecModel):
    """Stop a run by the clock, as the SFTTrainer actuator's benchmarks do
    (``stop_after_seconds``, ``auto_stop_method``). Checked after each optimizer step."""

    after_seconds: float | None = Field(
        default=None, gt=0, description="Ask the trainer to stop once this many seconds of "
        "training have passed (checked after each optimizer step; the actuator's "
        "stop_after_seconds).")
    method: Literal["WARMUP_60S_STABLE_120S_OR_10_STEPS"] | None = Field(
        default=None, description="A named auto-stop method: WARMUP_60S_STABLE_120S_OR_10_STEPS "
        "stops after 60 s of warm-up plus the longer of 120 s or 10 optimizer steps, and "
        "measures throughput without the warm-up (the actuator's auto_stop_method).")
    warmup_seconds: float | None = Field(
        default=None, ge=0, description="Auto-stop spelled out: seconds of warm-up, excluded "
        "from the stable throughput (instead of method).")
    stable_seconds: float | None = Field(
        default=None, ge=0, description="Auto-stop spelled out: at least this many seconds "
        "after the warm-up (instead of method).")
    stable_steps: int | None = Field(
        default=None, ge=1, description="Auto-stop spelled out: at least this many optimizer "
        "steps after the warm-up (instead of method).")

    def auto(self) -> tuple[float, float, int] | None:
        """(warm-up s, stable s, stable steps) of the auto-stop rule; None: no auto-stop."""
        if self.method is not None:
            return AUTO_STOP_METHODS[self.method]
        if self.warmup_seconds is None and self.stable_seconds is None \
                and self.stable_steps is None:
            return None
        return (self.warmup_seconds or 0.0, self.stable_seconds or 0.0, self.stable_steps or 1)


class Training(SpecModel):
    epochs: int | None = Field(default=1, ge=1, description="Passes over the training data.")
    max_steps: int | None = Field(
        default=None, ge=1, description="Stop after this many optimizer steps (wins over epochs)."
    )
    max_steps_per_epoch: int | None = Field(
        default=None, ge=1, description="Cap optimizer steps per epoch (torchtune)."
    )
    global_batch_size: int = Field(
        ge=1,
        description="Examples per optimizer step across all devices: micro_batch_size x "
        "gradient_accumulation_steps x world size (checked).",
    )
    micro_batch_size: int = Field(default=1, ge=1, description="Examples per device per forward.")
    gradient_accumulation_steps: int | None = Field(
        default=None, ge=1, description="Micro-batches per optimizer step; derived when omitted."
    )
    learning_rate: float = Field(gt=0, lt=1, description="Peak learning rate.")
    optimizer: Optimizer = Field(default_factory=Optimizer, description="Optimizer settings.")
    scheduler: Scheduler = Field(default_factory=Scheduler, description="LR schedule.")
    max_grad_norm: float | None = Field(default=1.0, gt=0, description="Gradient clipping norm.")
    gradient_checkpointing: bool = Field(
        default=False, description="Recompute activations in backward (saves memory)."
    )
    activation_offloading: bool = Field(
        default=False, description="Offload activations to CPU memory (torchtune)."
    )
    compile: bool = Field(default=False, description="torch.compile the model.")
    loss: Literal["cross_entropy", "chunked_cross_entropy"] = Field(
        default="cross_entropy", description="Loss function."
    )
    seed: int | None = Field(default=42, ge=0, description="Random seed.")
    logging: Logging = Field(default_factory=Logging, description="Logging.")
    evaluation: Evaluation = Field(default_factory=Evaluation, description="Evaluation.")
    checkpointing: Checkpointing = Field(
        default_factory=Checkpointing, description="Checkpoint saving."
    )
    early_stopping: EarlyStopping | None = Field(
        default=None, description="Stop when the eval metric stops improving."
    )
    stop: Stop | None = Field(
        default=None, description="Stop by the clock: after_seconds, and an auto-stop rule "
        "(warm-up, then a stable window) whose throughput excludes the warm-up."
    )
