"""Specs of one size whose bulk is either one long token or ordinary text, for the linear-
time checks of credential scanning (``test_secret_scan_time.py``, ``bench/redact.py``).

Both put their bulk in the same place (a block-scalar annotation of the tiny example), so
parsing costs the same and the difference is what scanning a token costs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny-local.yaml"

TOKEN_UNITS = {
    "x": "x",                       # one letter: the old named-value rule scanned it n^2
    "base64": "aB3+/",              # the old AWS-secret lookaheads
    "hex": "0123456789abcdef",      # the 40/32-hex rules
    "jwt-like": "eyJa-",            # the old JWT rule restarted at every eyJ
    "named": "a=",                  # name=value=name=…: the named-value rule
    "dotted": "a.b-",               # names with dots and dashes
}
"""Repeated to fill one token; each stressed a rule of the old, quadratic scanner."""


def _with_note(body_lines: list[str]) -> str:
    text = TINY.read_text(encoding="utf-8")
    note = "  annotations:\n    note: |\n" + "".join(f"      {line}\n" for line in body_lines)
    return text.replace("  name: tiny-local\n", "  name: tiny-local\n" + note, 1)


def _room(size: int) -> int:
    """Characters of note text that make the spec ``size`` bytes (one note line)."""
    return size - len(_with_note([""]).encode())


def ordinary_spec(size: int) -> str:
    """The tiny example, ``size`` bytes in all, with ordinary spec text (the examples'
    lines: comments, keys and values) as an annotation."""
    examples = [line.rstrip() for p in sorted((REPO / "examples").glob("*.yaml"))
                for line in p.read_text(encoding="utf-8").splitlines()
                if line.strip() and line.isascii()]
    room = _room(size)
    lines: list[str] = []
    while room > 7:  # a line needs 7 characters besides its text
        for line in examples:
            line = line[: max(0, room - 7)]  # each further line: 6 spaces and a newline
            if room <= 7:
                break
            lines.append(line)
            room -= len(line) + 7
    spec = _with_note(lines)
    return spec + "#" * (size - len(spec) - 1) + "\n" if len(spec) < size - 1 else spec


def long_token_spec(size: int, unit: str = "x") -> str:
    """The tiny example, ``size`` bytes in all, with one token as an annotation."""
    room = _room(size)
    return _with_note([(unit * (room // len(unit) + 1))[:room]])


def best_cpu(work: Callable[[], object], runs: int) -> float:
    """The least CPU time (``time.process_time``: this process only, so other programs on
    a busy machine count little) ``work`` took in ``runs`` runs."""
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best
