"""Dataset mixtures by proportion, and holding out validation examples.

``interleave`` draws from each (shuffled) source in turn by smooth weighted round robin: at
every draw each source earns its proportion in credit and the richest source gives the next
example, paying 1. Any prefix of the result therefore holds each source within one example of
its share. ``first_exhausted`` stops at the first source that runs out; ``all_exhausted``
keeps going (re-reading exhausted sources from the start) until every source has been read
once. ``concatenate`` takes every row of every source once (no proportions).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def interleave(parts: Sequence[Sequence[T]], proportions: Sequence[float], strategy: str,
               seed: int) -> list[T]:
    if strategy == "concatenate":  # every row once; the trainer's sampler shuffles
        return [row for part in parts for row in part]
    if len(parts) != len(proportions):
        raise ValueError("one proportion per source")
    if any(not p for p in parts):
        raise SystemExit("a mixture source has no examples")
    total = sum(proportions)
    weights = [p / total for p in proportions]
    orders = [_shuffled(len(p), seed + i) for i, p in enumerate(parts)]
    used = [0] * len(parts)
    credit = [0.0] * len(parts)
    out: list[T] = []
    while True:
        for i, w in enumerate(weights):
            credit[i] += w
        pick = max(range(len(parts)), key=lambda i: credit[i])
        credit[pick] -= 1.0
        if used[pick] == len(parts[pick]) and (
                strategy == "first_exhausted" or all(u >= len(p) for u, p in zip(used, parts))):
            return out
        out.append(parts[pick][orders[pick][used[pick] % len(parts[pick])]])
        used[pick] += 1
        if strategy == "all_exhausted" and all(u >= len(p) for u, p in zip(used, parts)):
            return out


def split_off(examples: Sequence[T], ratio: float, seed: int) -> tuple[list[T], list[T]]:
    """(train, held out): a seeded random ``ratio`` share (at least one) goes to the second."""
    if ratio <= 0:
        return list(examples), []
    order = _shuffled(len(examples), seed)
    held = max(1, math.ceil(len(examples) * ratio))
    if held >= len(examples):
        raise SystemExit(f"--validation_split_ratio {ratio} leaves no training examples")
    keep = sorted(order[held:])
    return [examples[i] for i in keep], [examples[i] for i in sorted(order[:held])]


def _shuffled(n: int, seed: int) -> list[int]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order
