"""DeepSpeed JSON files the tools ship, by file name, as ``distributed.deepspeed``.

A config names its DeepSpeed file by path; the importers do not read the file (it lives in
the tool's checkout, not beside the config). A file name the tool ships maps to its ZeRO
stage and offload; any other name is a warning at its line.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.spec.diagnostics import KeyPath

Shipped = dict[str, tuple[int, str, str]]
"""file name -> (ZeRO stage, offload_optimizer, offload_params)."""


def put_deepspeed(draft: SpecDraft, src: KeyPath, value: Any, shipped: Shipped,
                  tool: str) -> None:
    if not isinstance(value, str):
        draft.warn(src, f"deepspeed given inline: only {tool}'s shipped file names are "
                   "imported; set distributed.deepspeed by hand")
        return
    name = PurePosixPath(value).name
    if name not in shipped:
        draft.warn(src, f"deepspeed {value}: not one of {tool}'s shipped files "
                   f"({', '.join(sorted(shipped))}); set distributed.deepspeed by hand")
        return
    stage, opt, params = shipped[name]
    at = f"{draft.origin_of(src)} ({tool}'s {name})"
    draft.put(("distributed", "strategy"), "deepspeed", at)
    draft.put(("distributed", "deepspeed", "stage"), stage, at)
    if opt != "none":
        draft.put(("distributed", "deepspeed", "offload_optimizer"), opt, at)
    if params != "none":
        draft.put(("distributed", "deepspeed", "offload_params"), params, at)
