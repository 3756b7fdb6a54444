"""The launchers' own metric records and progress bars, parsed (every backend).

One parser for what the launchers ftspec compiles print, in order of preference:

- torchtune's metric logger (``StdoutLogger``, ``DiskLogger``)::

      Step 3 | loss:5.7712 lr:0.01 tokens_per_second_per_gpu:812.4

- the Hugging Face / TRL trainer's log records (``Trainer.log`` prints the dict)::

      {'loss': 5.7712, 'grad_norm': 1.2, 'learning_rate': 0.01, 'epoch': 0.25}
      {'train_runtime': 12.3, 'train_samples_per_second': 5.2, ..., 'train_loss': 4.1}

  A record has no step: the tracker counts them (``logging_steps`` apart) or derives the step
  from ``epoch`` and the steps per epoch the IR computed.
- torchtune's recipe line ``1|3|Loss: 5.7712`` (epoch|step|loss), the only record left when
  the metric logger writes elsewhere (TensorBoard, W&B): step and loss, nothing else.
- ``step=3 loss=5.7712 lr=0.01``: ftspec's former hf_sft entrypoint (older runs' logs).

The progress bar both launchers print after each step (``3/16 [00:05<00:20, 1.6s/it]``,
``parse_bar``) gives each step its time on the launcher's own clock, and the Hugging Face
trainer's bar the run's total steps: the step times of ``pace.progress`` (the time left).
Carriage-return fragments are split into lines (``split_lines``). Hand-written on purpose:
each launcher's record is one regular line and no library parses these formats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_NUM = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"
_TORCHTUNE_METRICS = re.compile(r"(?<!\w)Step (\d+) \| (.*)$")
_KEY_VALUE = re.compile(r"([A-Za-z_][\w/.-]*):" + _NUM)
_TORCHTUNE_BAR = re.compile(r"(?:^|\s)(\d+)\|(\d+)\|Loss: " + _NUM)
_STEP_LOSS = re.compile(r"(?:^|\s)step=(\d+) loss=" + _NUM + r"(?: lr=" + _NUM + ")?")
_TRAINER_RECORD = re.compile(r"\{'[a-z_]+': [^{}]*\}")
# numbers as Python prints them, also numpy scalars' repr (``np.float64(0.5)``)
_TRAINER_VALUE = re.compile(r"'(\w+)': (?:np\.\w+\()?'?" + _NUM)
# tqdm's ``n/total [elapsed<remaining, rate]`` (elapsed ``MM:SS`` or ``H:MM:SS``)
BAR = re.compile(r"(\d+)/(\d+) \[(?:(\d+):)?(\d+):(\d+)<[^,\]]*"
                 r"(?:, *(\d+(?:\.\d+)?)(it/s|s/it))?")

@dataclass(frozen=True)
class Record:
    """One metrics record as the launcher wrote it (``step`` None: the trainer's dicts)."""

    step: int | None = None
    loss: float | None = None
    lr: float | None = None
    epoch: float | None = None
    tokens_per_s: float | None = None
    tokens: float | None = None
    """Tokens trained on so far (TRL's ``num_tokens``)."""
    final: dict[str, float] = field(default_factory=dict)
    """The trainer's end-of-training summary (``train_runtime``, ``train_loss`` …)."""
    eval_loss: float | None = None


@dataclass(frozen=True)
class Bar:
    """A progress bar's position: ``n`` of ``of`` after ``elapsed_s`` (whole seconds)."""

    n: int
    of: int
    elapsed_s: float


def parse_bar(line: str) -> Bar | None:
    """The last progress-bar position a line shows, else None."""
    found = None
    for found in BAR.finditer(line):
        pass
    if found is None:
        return None
    elapsed = int(found.group(3) or 0) * 3600 + int(found.group(4)) * 60 + int(found.group(5))
    return Bar(int(found.group(1)), int(found.group(2)), float(elapsed))


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def parse_line(line: str) -> Record | None:
    """The metrics record a line carries, else None."""
    found = _TORCHTUNE_METRICS.search(line)
    if found:
        values = {k: float(v) for k, v in _KEY_VALUE.findall(found.group(2))}
        tps = values.get("tokens_per_second_per_gpu")
        return Record(step=int(found.group(1)), loss=values.get("loss"), lr=values.get("lr"),
                      tokens_per_s=tps)
    found = _TRAINER_RECORD.search(line)
    if found:
        return _trainer_record(found.group(0))
    bars = list(_TORCHTUNE_BAR.finditer(line))
    if bars:
        last = bars[-1]
        return Record(step=int(last.group(2)), loss=float(last.group(3)),
                      epoch=float(last.group(1)))
    found = _STEP_LOSS.search(line)
    if found:
        return Record(step=int(found.group(1)), loss=float(found.group(2)),
                      lr=_float(found.group(3)))
    return None


def _trainer_record(text: str) -> Record | None:
    nums = {k: float(v) for k, v in _TRAINER_VALUE.findall(text)}
    # a step's record carries train_runtime too when the trainer counts input tokens
    # (include_num_input_tokens_seen); the summary has train_loss and no loss
    if "train_loss" in nums or ("train_runtime" in nums and "loss" not in nums):
        return Record(final=nums, epoch=nums.get("epoch"))
    if "eval_loss" in nums:
        return Record(eval_loss=nums["eval_loss"], epoch=nums.get("epoch"))
    if "loss" not in nums:
        return None
    return Record(loss=nums["loss"], lr=nums.get("learning_rate"), epoch=nums.get("epoch"),
                  tokens=nums.get("num_tokens"))


def split_lines(text: str) -> list[str]:
    """Lines as a terminal would show them: progress bars rewrite with ``\\r``."""
    return [part for line in text.splitlines() for part in line.split("\r") if part.strip()]


def clean_lines(text: str) -> list[str]:
    """Log lines without progress-bar redraws: of each ``\\r``-joined line only its last
    fragment (what a terminal finally shows) is kept."""
    out = []
    for line in text.split("\n"):
        parts = [p for p in line.split("\r") if p.strip()]
        if parts:
            out.append(parts[-1])
    return out
