"""A Kubernetes job's progress (``list``) and measured properties (``output``), read from the
end of its pods' logs, the same logs ``ftspec logs`` reads.

Reads are bounded: the last ``*_TAIL_LINES`` lines of at most ``logs.MAX_TAIL_PODS`` pods,
at most ``*_LIMIT_BYTES`` each (the API server's ``tailLines`` / ``limitBytes``), within the
transport's timeout. A log is untrusted: it is only parsed (``progress``, ``measured``,
``failure``), numbers come out, and a non-finite loss is dropped (JSON cannot carry it).

What the cluster cannot tell is said, not guessed: ``unavailable`` names each missing
property and why (no kubelet answered for the log, the launcher does not log it, or the
Kubernetes API does not keep it: a pod's peak memory, the dataset's token count).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from ftspec.compiler.summary import SUMMARY_ANNOTATION
from ftspec.reconciler import pace
from ftspec.reconciler.applied import RECORD_KEY, applied_summary, decode
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.failure import describe
from ftspec.reconciler.kubernetes.logs import recent_lines
from ftspec.reconciler.kubernetes.observe import failure, metric_lines, times
from ftspec.reconciler.kubernetes.status import phase_of
from ftspec.reconciler.kubernetes.transport import Transport
from ftspec.reconciler.measured import bar_position, measure, short_of_plan
from ftspec.reconciler.model import Phase
from ftspec.reconciler.progress import Tracker, parse_line, track_text, tracker_settings
from ftspec.spec.ir import Job

LIST_TAIL_LINES = 200
LIST_LIMIT_BYTES = 256 * 1024
MEASURE_TAIL_LINES = 20_000
MEASURE_LIMIT_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class LogProgress:
    step: int | None = None
    total_steps: int | None = None
    loss: float | None = None
    note: str | None = None
    """Why step / loss are not known (None when they are)."""
    seconds_left: float | None = None
    """The time left (``pace.progress``: as ``status`` and ``apply --wait`` say it)."""


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def applied_total_steps(live: dict[str, Any]) -> int | None:
    """The total steps ftspec recorded when it applied the job (its applied record)."""
    record = decode(((live.get("metadata") or {}).get("annotations") or {}).get(RECORD_KEY))
    return None if record is None else _int(record.summary.get("max steps"))


def _read(t: Transport, live: dict[str, Any], tail: int, limit: int
          ) -> tuple[list[str], dict[str, dict[str, Any]], str | None]:
    """Log lines, pods, and why there are no lines (None when there are)."""
    try:
        lines, pods, unread = recent_lines(t, live, tail=tail, limit_bytes=limit)
    except BackendError as exc:
        return [], {}, f"its pods cannot be listed: {exc}"
    if lines:
        return lines, pods, None
    if unread:
        more = f" (and {len(unread) - 1} more pods alike)" if len(unread) > 1 else ""
        return [], pods, f"no pod log could be read: {unread[0]}{more}"
    return [], pods, "its pods' logs are empty" if pods else "the job has no pods"


def progress(t: Transport, live: dict[str, Any], now: float | None = None) -> LogProgress:
    """Step / total steps, the last loss and the time left of a job, from the end of its
    trainer's log (``now``: the clock, for the time elapsed since the job started)."""
    phase = phase_of(live)[0]
    total = applied_total_steps(live)
    if phase is Phase.PENDING:
        return LogProgress(total_steps=total, note="pending: no pod has run yet")
    lines, _, why = _read(t, live, LIST_TAIL_LINES, LIST_LIMIT_BYTES)
    texts = metric_lines(lines)
    tracker = Tracker(total_steps=total)
    tracker.feed(texts)
    last = tracker.last
    if last is None:
        return LogProgress(total_steps=total, note=why or (
            f"no metric record in the last {LIST_TAIL_LINES} lines of its log"))
    loss = last.loss if last.loss is not None and math.isfinite(last.loss) else None
    step: int | None = last.step
    if not any((r := parse_line(x)) is not None and r.step is not None for x in texts):
        # the trainer's dicts carry no step: counting them in a tail would be wrong
        bar = bar_position("\n".join(texts))
        step = bar[0] if bar else None
        total = total or (bar[1] if bar else None)
    note = None if step is not None else \
        "the trainer's records carry no step number and no progress bar was read"
    start, end = times(live)
    clock = time.time() if now is None else now
    elapsed = None if start is None else (end or clock) - start
    left = pace.progress(step, total, logged=tracker.logged_times(), elapsed_s=elapsed,
                         ended=phase in (Phase.SUCCEEDED, Phase.FAILED)).seconds_left
    return LogProgress(step, total, loss, note, left)


PEAK_UNAVAILABLE = ("the launcher logged no CUDA peak (torchtune: log_peak_memory_stats; a "
                    "CPU run has none) and the Kubernetes API keeps no container's peak memory "
                    "(metrics-server reports current usage only)")
TOKENS_UNAVAILABLE = ("the launcher logged no token count (TRL's num_tokens); torchtune's "
                      "dataset lies on the cluster, where ftspec does not tokenize it")


def measured(t: Transport, job: Job, live: dict[str, Any]) -> dict[str, Any]:
    """The ended job's measured properties (``reconciler.measured``) with ``unavailable``:
    {property: why}; empty while it has not ended."""
    phase = phase_of(live)[0]
    if phase not in (Phase.SUCCEEDED, Phase.FAILED):
        return {}
    lines, pods, why = _read(t, live, MEASURE_TAIL_LINES, MEASURE_LIMIT_BYTES)
    text = "\n".join(metric_lines(lines))
    tracker = track_text(text, **tracker_settings(job))
    # a run that exited 0 short of its plan is invalid, as on every backend; only when its
    # log was read (no log: the steps it trained are unknown, not zero)
    short = short_of_plan(text, tracker, applied_summary(
        (live.get("metadata") or {}).get("annotations") or {}, SUMMARY_ANNOTATION)) \
        if phase is Phase.SUCCEEDED and not why else {}
    validity = str(short.get("validity") or "ok") if phase is Phase.SUCCEEDED else \
        str(failure(live, pods, lines).get("validity") or "failed")
    out: dict[str, Any] = measure(text, tracker, validity=validity,
                                  devices=job.world_size, global_batch=job.global_batch_size)
    if short.get("trained"):
        out["validity_reason"] = describe(short)
    missing: dict[str, str] = {}
    if "train_runtime_s" not in out:
        missing["train_runtime_s"] = why or (
            f"no train_runtime summary or progress bar in the last {MEASURE_TAIL_LINES} "
            "lines of its log")
    if "dataset_tokens" not in out:
        missing["dataset_tokens"] = why or TOKENS_UNAVAILABLE
    if "dataset_tokens_per_second" not in out:
        missing["dataset_tokens_per_second"] = "needs dataset_tokens and train_runtime_s"
    if "peak_memory" not in out:
        missing["peak_memory"] = why or PEAK_UNAVAILABLE
    if why and phase is Phase.FAILED:
        missing["validity"] = (f"from the job's status and pods only ({why}): an exception "
                               "in the log would make it more precise")
    if missing:
        out["unavailable"] = missing
    return out
