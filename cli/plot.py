"""`ftspec output --plot FILE`: the run's loss and learning-rate curves as a PNG.

matplotlib is an optional extra (``ftspec[plot]``); importing this module without it raises
ImportError, which the command turns into advice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display needed

import matplotlib.pyplot as plt

LOSS_COLOR = "#1f77b4"
LR_COLOR = "#d62728"


def draw_curves(curve: dict[str, list[Any]], path: Path, title: str | None = None) -> Any:
    """Loss (top) and learning rate (bottom) against the step, under ``title`` (the run);
    returns the Figure."""
    steps = curve["step"]
    loss = [(s, v) for s, v in zip(steps, curve.get("loss") or [], strict=False) if v is not None]
    lr = [(s, v) for s, v in zip(steps, curve.get("lr") or [], strict=False) if v is not None]
    rows = 2 if lr else 1
    fig, axes = plt.subplots(rows, 1, figsize=(7, 2.6 * rows), sharex=True, squeeze=False)
    top = axes[0][0]
    top.plot([s for s, _ in loss], [v for _, v in loss], color=LOSS_COLOR, marker=".",
             label="train loss")
    top.set_ylabel("loss")
    top.grid(alpha=0.3)
    if lr:
        bottom = axes[1][0]
        bottom.plot([s for s, _ in lr], [v for _, v in lr], color=LR_COLOR, marker=".",
                    label="learning rate")
        bottom.set_ylabel("learning rate")
        bottom.ticklabel_format(axis="y", style="sci", scilimits=(-2, 2))
        bottom.grid(alpha=0.3)
    axes[-1][0].set_xlabel("step")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return fig


def draw_overlay(curves: list[tuple[str, dict[str, list[Any]]]], path: Path, title: str) -> Any:
    """The loss curves of several runs (a sweep's points) on one axis, one line and legend
    entry each, under ``title`` (the sweep); returns the Figure."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for label, curve in curves:
        loss = [(s, v) for s, v in zip(curve["step"], curve.get("loss") or [], strict=False)
                if v is not None]
        ax.plot([s for s, _ in loss], [v for _, v in loss], marker=".", label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("train loss")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return fig
