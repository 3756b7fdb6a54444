"""What the importers of flat, one-mapping configs share (TRL, axolotl, LLaMA-Factory):
a :class:`Reader` over another tool's key names and defaults, the launch resources, and the
end of an import (every key left unread is a warning at its line; the spec is rendered)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import Imported, SpecDraft, family_for_hub_id
from ftspec.compiler.importers.trl_reader import Reader, hub_or_file_uri


class FlatReader(Reader):
    """The TRL reader over another tool's keys (``aliases``: its key -> the TRL name) and
    defaults; a key whose value is null counts as unset, as the tools' own parsers read it."""

    def __init__(self, draft: SpecDraft, tool: str, sft: dict[str, Any],
                 model: dict[str, Any], aliases: dict[str, str]) -> None:
        super().__init__(draft)
        self.data = {k: v for k, v in draft.source.data.items() if v is not None}
        self.fms = False
        self.tool, self.sft, self.model, self.aliases = tool, sft, model, dict(aliases)


def model_source(r: Reader) -> None:
    """``model.uri`` and its catalog family (a warning at the key when there is none), and
    ``trust_remote_code``."""
    d = r.draft
    name = str(r.value("model_name_or_path"))
    d.put(("model", "uri"), hub_or_file_uri(name), r.origin("model_name_or_path"))
    family = family_for_hub_id(name)
    if family is not None:
        d.put(("model", "family"), family, f"{r.origin('model_name_or_path')} (catalog)")
    else:
        d.warn((r.key("model_name_or_path") or "",), f"{name} is not in ftspec's model "
               "catalog: add model.architecture (its config.json numbers) for the memory "
               "estimate")
    if r.value("trust_remote_code") is True:
        d.put(("model", "trust_remote_code"), True, r.origin("trust_remote_code"))


def resources(r: Reader, config: str, nproc: int | None, nnodes: int | None,
              accelerator: str) -> int:
    """``resources`` from the command line (``config``: "an axolotl config", ...)."""
    from ftspec.compiler.importers.trl import _resources

    world = _resources(r.draft, nproc, nnodes, accelerator)
    for key in (("resources", "gpus_per_node"), ("resources", "accelerator")):
        r.draft.origins[key] = r.draft.origins[key].replace("a TRL config", config)
    return world


def finish(command: str, r: Reader, path: Path, launcher: str,
           no_effect: tuple[str, ...] = ()) -> Imported:
    """``launcher: accelerate`` (``launcher``: why), unread keys as warnings, the spec text.
    ``no_effect``: keys that change no hyper-parameter (their warning says so)."""
    from ftspec.compiler.importers.render import render

    draft = r.draft
    draft.put(("launcher",), "accelerate", launcher)
    for key in draft.source.data:
        if key not in r.used and key in r.data:
            why = " (no hyper-parameter)" if key in no_effect else ""
            draft.warn((key,), f"{key} has no spec field: not imported{why}")
    head = (f"Imported by `ftspec import {command}` from {path} ({r.tool}).\n"
            "Comments say where each value came from; the tool's implicit defaults are "
            "written out.")
    return Imported(command, render(draft, head), draft.data, tuple(draft.warnings))
