"""What a run is doing between its start and step 1, and while it saves: phase lines read
from the launchers' own log lines (every backend's ``wait`` reports them).

Before the first step a launcher spends tens of seconds importing, loading the model and
tokenizing the data, and after the last one it saves checkpoints; the live progress line would
sit blank or on "0s left" meanwhile. Each pattern below is a line torchtune's recipes or the
Hugging Face / TRL trainer print at that moment (hand-written: no library reads them).
"""

from __future__ import annotations

import re

_PHASES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\[ftspec\] run started "), "starting the launcher"),
    (re.compile(r"^Running (\w+) with resolved config"), "torchtune's {0} started; loading the model"),
    (re.compile(r"^Model is initialized"), "loading the tokenizer"),
    (re.compile(r"^Tokenizer is initialized"), "setting up the optimizer and loss"),
    (re.compile(r"^Loss is initialized"), "reading the dataset"),
    (re.compile(r"Generating train split: (\d+) examples \[[^\]]*?\d+\.\d+ examples/s\]$"),
     "read {0} rows (tokenized as the steps take them)"),
    (re.compile(r"^Learning rate scheduler is initialized"), "starting step 1"),
    (re.compile(r"^Loading checkpoint shards"), "loading the model"),
    (re.compile(r"^(?:Tokenizing|Map) .*?(\d+) examples"), "tokenizing {0} rows"),
    (re.compile(r"\*{5} Running training \*{5}"), "starting step 1"),
    (re.compile(r"^(?:Starting checkpoint save|Saving model checkpoint to|Saving final)"),
     "saving a checkpoint"),
    (re.compile(r"^Checkpoint saved in ([\d.]+) seconds"), "checkpoint saved ({0} s)"),
)


def phase_line(line: str) -> str | None:
    """The phase ``line`` announces (``loading the model``, ``saving a checkpoint``), or None."""
    text = line.strip()
    for pattern, words in _PHASES:
        found = pattern.search(text)
        if found:
            return words.format(*found.groups())
    return None
