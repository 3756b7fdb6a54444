"""``training.stop`` on the accelerate launcher: the rule handed to ftspec's entrypoint.

TRL's ``trl sft`` adds no callback, so a spec with a stop rule runs ftspec's ``hf_sft``
entrypoint, which adds ``hf_sft/stop.py``'s ``TrainerCallback``: after each optimizer step it
asks the trainer to stop (``control.should_training_stop``) once ``after_seconds`` passed, or
once the auto-stop rule's warm-up and stable window are over, and prints the stable window
(steps, seconds, tokens) for the measured properties (``reconciler/measured.py``). Tokens are
the trainer's own non-padding count (the entrypoint sets
``include_num_input_tokens_seen`` to ``non_padding``, a value TRL's YAML parser cannot read).
"""

from __future__ import annotations

from typing import Any

from ftspec.spec.ir import Job


def stop_entry(job: Job) -> dict[str, Any] | None:
    """prepare.json's ``stop`` (None: the spec stops by epochs / max_steps only)."""
    stop = job.spec.training.stop
    if stop is None:
        return None
    auto = stop.auto()
    if stop.after_seconds is None and auto is None:
        return None
    out: dict[str, Any] = {"after_seconds": stop.after_seconds}
    if auto is not None:
        out.update(warmup_seconds=auto[0], stable_seconds=auto[1], stable_steps=auto[2])
    return out

