"""Training schedule: duration, warm-up, step-based strategies."""

from __future__ import annotations

from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.model import FineTuneSpec
from ftspec.spec.rules._diag import error


def duration(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    t = spec.training
    if t.epochs is None and t.max_steps is None:
        yield error(("training",), "give training.epochs or training.max_steps", "duration")


def warmup(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    s = spec.training.scheduler
    if s.warmup_steps is not None and s.warmup_ratio is not None:
        yield error(("training", "scheduler", "warmup_ratio"),
                    "give warmup_steps or warmup_ratio, not both", "warmup-both")


def step_strategies(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    t = spec.training
    for section, cfg in (("evaluation", t.evaluation), ("checkpointing", t.checkpointing)):
        if cfg.strategy == "steps" and cfg.steps is None:
            yield error(("training", section, "strategy"),
                        f"{section} strategy steps needs training.{section}.steps",
                        "steps-missing")


def stop_rule(spec: FineTuneSpec) -> Iterator[Diagnostic]:
    """``training.stop``: a named auto-stop method fixes its own numbers."""
    stop = spec.training.stop
    if stop is None or stop.method is None:
        return
    for name in ("warmup_seconds", "stable_seconds", "stable_steps"):
        if getattr(stop, name) is not None:
            yield error(("training", "stop", name), f"stop.method {stop.method} fixes the "
                        f"warm-up and the stable window; {name} cannot change it",
                        "stop-method-and-numbers",
                        hint=f"remove {name}, or remove method and spell the rule out with "
                        "warmup_seconds, stable_seconds and stable_steps")
