"""A run's measured properties, as the SFTTrainer seed defines them (pure: text in, dict out).

- ``train_runtime_s``: from the start of the first training step to the end of the last.
  The Hugging Face / TRL trainer reports it (``train_runtime``); torchtune does not, so it
  is read from torchtune's own progress bar: the bar starts with the epoch's first step and
  prints the elapsed time after each step (``16/16 [00:35<00:00, 2.19s/it]``); the epochs'
  last elapsed times are summed. The bar counts whole seconds, so an epoch shorter than
  ``BAR_EXACT_S`` is timed by its steps over the bar's rate instead (tqdm's smoothed
  iterations per second: a sub-second epoch would otherwise measure 0 s).
- ``dataset_tokens``: the tokens of the rows trained on, padding excluded, truncation applied.
  TRL counts them itself (``num_tokens``, from the attention mask). For torchtune, the run's
  dataset is tokenized by torchtune's own config loader (``local/tokens.py``) and the
  rows each step took are counted: ``tokens / rows x rows trained`` (exact for whole
  epochs; the mean row for a partial one, since which rows a shuffled partial epoch took
  is not logged).
- ``dataset_tokens_per_second`` = dataset_tokens / train_runtime_s, and ``…_per_device``:
  divided by the devices (GPUs, or processes on CPU).
- ``peak_memory``: on GPU the CUDA allocator's maximum (torchtune logs ``peak_memory_alloc``
  when ``log_peak_memory_stats`` is on; ftspec's TRL entrypoint prints it); on CPU the peak
  resident set of the largest training process (the kernel's ``ru_maxrss`` of the run's
  descendants, recorded by the supervisor when the run ends).
- ``validity``: ok / invalid (out of memory, or fewer steps trained than planned) / failed
  (another error), from ``failure``; ``validity_reason`` says why it is not ok.
- with ``training.stop``: ``stopped_by``, ``stable_window`` and
  ``dataset_tokens_per_second_stable`` (the throughput without the warm-up), from ``stopped``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ftspec.reconciler.failure import short_run
from ftspec.reconciler.progress import BAR, Tracker, split_lines
from ftspec.reconciler.stopped import stopped

BAR_EXACT_S = 10
"""From this many seconds on, the bar's whole-second elapsed time is within 10%."""
_PEAK_ALLOC = re.compile(r"peak_memory_alloc:([\d.]+)")
_CUDA_PEAK = re.compile(r"\[ftspec\] cuda_max_allocated_bytes=(\d+)")


def bar_runtime(text: str) -> float | None:
    """Seconds torchtune's progress bars ran: the last elapsed time of each bar, summed."""
    total = 0.0
    last: tuple[int, int, float] | None = None
    seen = False
    for line in split_lines(text):
        for found in BAR.finditer(line):
            n, of = int(found.group(1)), int(found.group(2))
            elapsed = float(int(found.group(3) or 0) * 3600 + int(found.group(4)) * 60
                            + int(found.group(5)))
            rate, unit = found.group(6), found.group(7)
            if elapsed < BAR_EXACT_S and rate is not None and float(rate) > 0:
                per_step = 1 / float(rate) if unit == "it/s" else float(rate)
                elapsed = n * per_step
            if last is not None and (of != last[1] or n < last[0]):
                total += last[2]  # a new bar: the previous epoch ended
            last = (n, of, elapsed)
            seen = True
    if not seen or last is None:
        return None
    return total + last[2]


def bar_position(text: str) -> tuple[int, int] | None:
    """The last ``n/of`` a progress bar printed (the HF trainer's bar counts global steps)."""
    last = None
    for line in split_lines(text):
        for found in BAR.finditer(line):
            last = (int(found.group(1)), int(found.group(2)))
    return last


def trained_steps(text: str, tracker: Tracker) -> tuple[int, bool]:
    """Optimizer steps a run's log shows it trained, and whether that count is exact: the
    last step a metrics record gave, or the progress bar's count when larger (the Hugging
    Face trainer's bar counts every global step; torchtune's counts the steps of an epoch,
    each also named by its step line). Without a bar the records may be ``logging_steps``
    apart (not exact)."""
    last = tracker.last.step if tracker.last is not None else 0
    bar = bar_position(text)
    return (max(last, bar[0]), True) if bar is not None else (last, False)


def short_of_plan(text: str, tracker: Tracker, summary: Mapping[str, str]
                  ) -> dict[str, Any]:
    """Why a run that exited 0 is invalid (``failure.short_run``), on every backend: the
    steps its log shows (``trained_steps``) against the ``max steps`` of the ML summary it
    was applied with, unless that summary names a ``stop rule``. Empty: ok."""
    try:
        planned = int(summary.get("max steps", ""))
    except ValueError:  # "-": the total was not known
        return {}
    trained, exact = trained_steps(text, tracker)
    return short_run(trained, planned, stop_rule="stop rule" in summary,
                     slack=0 if exact else tracker.logging_steps - 1)


def peak_cuda_bytes(text: str) -> int | None:
    """The CUDA allocator's maximum the launcher logged (bytes), else None."""
    exact = [int(v) for v in _CUDA_PEAK.findall(text)]
    if exact:
        return max(exact)
    gib = [float(v) for v in _PEAK_ALLOC.findall(text)]
    return int(max(gib) * 2**30) if gib else None


def measure(text: str, tracker: Tracker, *, validity: str | None, devices: int,
            global_batch: int, dataset: dict[str, int] | None = None,
            max_rss_bytes: int | None = None) -> dict[str, Any]:
    """The measured properties of one run. ``dataset``: ``{"rows", "tokens"}`` of the
    tokenized training data (torchtune); ``max_rss_bytes``: the supervisor's ``ru_maxrss``."""
    out: dict[str, Any] = {"validity": validity}
    runtime = tracker.final.get("train_runtime") if tracker.final else None
    if runtime is None:
        runtime = bar_runtime(text)
    out["train_runtime_s"] = runtime
    tokens: float | None = tracker.tokens_seen()
    how = "counted by the trainer (num_tokens)" if tokens is not None else None
    last = tracker.last
    if tokens is None and dataset and dataset.get("rows") and last is not None:
        rows = dataset["rows"]
        per_epoch = tracker.steps_per_epoch or max(1, -(-rows // global_batch))
        epochs, steps = divmod(last.step, per_epoch)  # an epoch may be capped in steps
        trained = epochs * min(rows, per_epoch * global_batch) + min(rows, steps * global_batch)
        tokens = dataset["tokens"] / rows * trained
        how = (f"{dataset['tokens']} tokens in {rows} rows (torchtune's tokenizer and dataset "
               f"of the run), {trained} rows trained")
    out["dataset_tokens"] = None if tokens is None else round(tokens)
    out["dataset_tokens_how"] = how
    if tokens is not None and runtime:
        rate = tokens / runtime
        out["dataset_tokens_per_second"] = round(rate, 1)
        out["dataset_tokens_per_second_per_device"] = round(rate / max(1, devices), 1)
        out["devices"] = devices
    out.update(stopped(text, devices))
    cuda = peak_cuda_bytes(text)
    if cuda is not None:
        out["peak_memory"] = {"kind": "cuda max allocated", "bytes": cuda}
    elif max_rss_bytes is not None:
        out["peak_memory"] = {"kind": "cpu peak RSS (largest training process)",
                              "bytes": max_rss_bytes}
    return {k: v for k, v in out.items() if v is not None}
