"""Training progress read back from a launcher's log: step and loss (every backend).

Understood lines (all launchers ftspec compiles):
- torchtune's progress bar (stderr):  ``1|3|Loss: 5.7712...``  (epoch|step|loss)
- torchtune's metric loggers:         ``Step 3 | loss:5.7712 lr:0.0003 ...``
- the Hugging Face / TRL trainer (accelerate): its log records,
  ``{'loss': '5.771', 'grad_norm': '0.41', 'learning_rate': '0.0003', 'epoch': '0.06'}``
  (no step number in them: ``Progress.step`` stays None; ``trainer_records`` reads them all)
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

_NUM = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"
_PATTERNS = (
    re.compile(r"(?:^|\s)\d+\|(\d+)\|Loss: " + _NUM),
    re.compile(r"(?:^|\s)Step (\d+) \| loss:" + _NUM),
    re.compile(r"(?:^|\s)step=(\d+) loss=" + _NUM),
)
_TRAINER_RECORD = re.compile(r"\{'(?:loss|eval_loss|train_runtime)': [^{}]*\}")
_TAIL_READ_BYTES = 256 * 1024


@dataclass(frozen=True)
class Progress:
    step: int | None = None
    loss: float | None = None

    def to_metrics(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {}
        if self.step is not None:
            out["step"] = self.step
        if self.loss is not None:
            out["loss"] = self.loss
        return out


def parse_line(line: str) -> Progress | None:
    """The (step, loss) a line reports, else None."""
    for pattern in _PATTERNS:
        found = None
        for found in pattern.finditer(line):
            pass
        if found is not None:
            return Progress(int(found.group(1)), float(found.group(2)))
    records = [r for r in trainer_records(line) if "loss" in r]
    if records:
        return Progress(None, records[-1]["loss"])
    return None


def progress_text(p: Progress) -> str:
    """How a progress event reads: ``step=3 loss=5.77`` (``loss=5.77`` without a step)."""
    loss = f"loss={p.loss:g}" if p.loss is not None else ""
    return f"step={p.step} {loss}".strip() if p.step is not None else loss


def trainer_records(text: str) -> list[dict[str, float]]:
    """The Hugging Face trainer's log records in ``text`` (train, eval and summary), with
    their values as numbers (transformers 5 prints them as quoted strings)."""
    out = []
    for found in _TRAINER_RECORD.finditer(text):
        try:
            raw = ast.literal_eval(found.group(0))
            out.append({str(k): float(v) for k, v in raw.items()})
        except (ValueError, SyntaxError, TypeError):
            continue
    return out


def split_lines(text: str) -> list[str]:
    """Lines as a terminal would show them: progress bars rewrite with ``\\r``."""
    return [part for line in text.splitlines() for part in line.split("\r") if part.strip()]


def latest(text: str) -> Progress:
    """The last step/loss reported in ``text`` (an empty Progress when none)."""
    for line in reversed(split_lines(text)):
        found = parse_line(line)
        if found is not None:
            return found
    return Progress()


def read_tail(path: Path, max_bytes: int = _TAIL_READ_BYTES) -> str:
    """The end of a log file (text), or '' when it does not exist."""
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def tail_lines(text: str, n: int) -> list[str]:
    return split_lines(text)[-n:] if n > 0 else []


class LogFollower:
    """Reads what was appended to a log since the last call (for live progress)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._partial = ""

    def read_new(self) -> list[str]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        self.offset += len(data)
        text = self._partial + data.decode("utf-8", errors="replace")
        # keep an unterminated last line for the next call
        cut = max(text.rfind("\n"), text.rfind("\r"))
        self._partial = text[cut + 1:]
        return split_lines(text[:cut + 1])
