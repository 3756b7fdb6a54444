"""A torchtune recipe config as a :class:`SourceDoc`, with ``tune run``'s overrides applied.

``key=value`` arguments set dotted keys (values read as YAML scalars, as torchtune's
OmegaConf dotlist reads them) and ``~key`` removes one, as ``tune run`` does. The source map
points overridden keys at the argument (``--set[i]``), so origins and warnings name it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import not_this_tool
from ftspec.spec.loader import SourceDoc, load_spec_file
from ftspec.spec.overrides import apply_sets

_NPROC = re.compile(r"--nproc[_-]per[_-]node[ =](\d+)")


def load_source(path: Path, args: tuple[str, ...]) -> SourceDoc:
    doc = load_spec_file(path)
    sets = [a for a in args if not a.startswith("~")]
    removals = [a[1:] for a in args if a.startswith("~")]
    if sets:
        doc = apply_sets(doc, sets)
    if removals:
        data = copy.deepcopy(doc.data)
        for key in removals:
            _remove(data, key.split("."))
        doc = replace(doc, data=data)
    check_is_torchtune(doc)
    return doc


def check_is_torchtune(doc: SourceDoc) -> None:
    data = doc.data
    if not isinstance(data, dict):
        raise not_this_tool(doc, (), "not a torchtune config: the document is not a mapping",
                            "give a torchtune recipe config (tune cp <config> to get one)")
    model = data.get("model")
    component = model.get("_component_") if isinstance(model, dict) else None
    if not isinstance(component, str) or not component.startswith("torchtune.models."):
        where: tuple[str, ...] = ("model", "_component_") if isinstance(model, dict) else \
            (("model",) if "model" in data else ())
        raise not_this_tool(doc, where, "not a torchtune recipe config: no "
                            "model._component_ naming a torchtune.models builder",
                            "torchtune configs build the model from model._component_")


_RECIPE = re.compile(r"\btune run\b(?:\s+--\S+(?:[ =]\S+)?)*\s+([A-Za-z0-9_]+)")


def recipe_hint(doc: SourceDoc) -> tuple[str, int] | None:
    """The recipe the config's own usage comment runs (``tune run RECIPE --config ...``):
    (recipe, line)."""
    for number, line in enumerate(doc.text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            m = _RECIPE.search(line)
            if m:
                return m.group(1), number
    return None


def nproc_hint(doc: SourceDoc) -> tuple[int, int] | None:
    """``--nproc_per_node N`` in the config's own usage comment: (N, line)."""
    for number, line in enumerate(doc.text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            m = _NPROC.search(line)
            if m:
                return int(m.group(1)), number
    return None


def _remove(data: dict[str, Any], parts: list[str]) -> None:
    node: Any = data
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(parts[-1], None)
