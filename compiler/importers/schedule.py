"""transformers' ``lr_scheduler_type`` with its ``lr_scheduler_kwargs`` as the spec's schedule,
for every importer of a tool that hands both to transformers' ``get_scheduler`` (TRL,
axolotl, LLaMA-Factory, Oumi).

``cosine_with_min_lr`` (transformers' ``get_cosine_with_min_lr_schedule_with_warmup``) is the
spec's cosine with ``min_lr_ratio``: ``min_lr_rate`` is that ratio, an absolute ``min_lr`` is
divided by the peak learning rate as transformers does; exactly one of the two must be given
(transformers raises otherwise). ``num_cycles`` goes to the cosine schedules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEDULERS = ("linear", "cosine", "constant", "constant_with_warmup", "cosine_with_restarts",
              "polynomial", "inverse_sqrt")
"""transformers schedule names the spec has under the same name."""
MIN_LR = "cosine_with_min_lr"


@dataclass
class Schedule:
    """The spec's ``training.scheduler`` fields one (name, kwargs) pair gives."""

    name: str | None
    """The spec's schedule name; None: none fits (``problem`` says why)."""
    fields: dict[str, float] = field(default_factory=dict)
    """``min_lr_ratio`` / ``num_cycles``."""
    unread: list[str] = field(default_factory=list)
    """Keyword arguments the spec cannot say."""
    problem: str | None = None


def schedule(name: str, kwargs: Any, learning_rate: float) -> Schedule:
    kw = dict(kwargs) if isinstance(kwargs, dict) else {}
    if name not in SCHEDULERS and name != MIN_LR:
        return Schedule(None, unread=sorted(map(str, kw)),
                        problem=f"{name} has no spec schedule")
    out = Schedule("cosine" if name == MIN_LR else name)
    cosine = out.name in ("cosine", "cosine_with_restarts")
    if cosine and isinstance(kw.get("num_cycles"), (int, float)):
        out.fields["num_cycles"] = float(kw.pop("num_cycles"))
    if name == MIN_LR:
        rate, floor = kw.pop("min_lr_rate", None), kw.pop("min_lr", None)
        if (rate is None) == (floor is None):
            out.name, out.problem = None, (f"{MIN_LR} needs exactly one of min_lr / "
                                           "min_lr_rate in lr_scheduler_kwargs (transformers "
                                           "refuses it otherwise)")
        elif rate is not None:
            out.fields["min_lr_ratio"] = float(rate)
        else:
            out.fields["min_lr_ratio"] = float(floor) / learning_rate
    out.unread = sorted(map(str, kw))
    return out
