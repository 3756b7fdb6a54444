"""How a run with ``training.stop`` ended, read from its log (pure: text in, dict out).

The accelerate entrypoint's stop callback (``runtime/hf_sft/stop.py``) prints one
line when training ends::

    [ftspec] stop {"last": {"elapsed_s": 3.2, "step": 14, "tokens": 9120}, "reason": "auto",
                   "rule": {...}, "warmup_end": {"elapsed_s": 1.0, "step": 4, "tokens": 2560}}

From it come the measured properties

- ``stopped_by``: ``after_seconds`` or ``auto`` (absent: the run reached its epochs /
  max_steps first);
- ``stable_window``: the steps after the warm-up (``from_step`` exclusive, ``to_step``),
  their seconds and tokens, and whether the auto-stop rule completed it;
- ``dataset_tokens_per_second_stable`` (and ``…_per_device``): the window's tokens over its
  seconds — the throughput without the warm-up, as the SFTTrainer actuator reports it.

The line is read back from a log anyone could write: every field is type-checked, numbers
must be finite and not negative, and anything else leaves these properties out.
"""

from __future__ import annotations

import math
from typing import Any

from ftspec.reconciler.answers import AnswerRefused, parse_json
from ftspec.reconciler.progress import split_lines
from ftspec.runtime.stop_line import STOP_LINE

_REASONS = ("after_seconds", "auto")


def _mark(obj: Any) -> tuple[int, float, int] | None:
    if not isinstance(obj, dict):
        return None
    step, elapsed, tokens = _count(obj.get("step")), obj.get("elapsed_s"), _count(obj.get("tokens"))
    if step is None or tokens is None or isinstance(elapsed, bool) \
            or not isinstance(elapsed, (int, float)) or not math.isfinite(elapsed) \
            or elapsed < 0:
        return None
    return step, float(elapsed), tokens


def _count(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62
    return int(value) if ok else None


def _last_summary(text: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = None
    for line in split_lines(text):
        at = line.find(STOP_LINE)
        if at < 0:
            continue
        try:  # a log line is the job's, read as untrusted: within answers' bounds
            obj = parse_json(line[at + len(STOP_LINE):], "the stop line")
        except AnswerRefused:
            continue
        if isinstance(obj, dict):
            found = obj
    return found


def stopped(text: str, devices: int) -> dict[str, Any]:
    """The stop rule's measured properties (empty: no stop line in the log)."""
    summary = _last_summary(text)
    if summary is None:
        return {}
    out: dict[str, Any] = {}
    reason = summary.get("reason")
    if reason in _REASONS:
        out["stopped_by"] = reason
    last, warm = _mark(summary.get("last")), _mark(summary.get("warmup_end"))
    if last is not None:
        out["stopped_at_step"] = last[0]
    if last is None or warm is None or last[0] <= warm[0] or last[1] <= warm[1] \
            or last[2] < warm[2]:
        return out
    seconds, tokens = last[1] - warm[1], last[2] - warm[2]
    out["stable_window"] = {"from_step": warm[0], "to_step": last[0],
                            "seconds": round(seconds, 3), "tokens": tokens,
                            "complete": reason == "auto"}
    rate = tokens / seconds
    out["dataset_tokens_per_second_stable"] = round(rate, 1)
    out["dataset_tokens_per_second_stable_per_device"] = round(rate / max(1, devices), 1)
    return out
