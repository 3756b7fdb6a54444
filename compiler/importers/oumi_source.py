"""An Oumi config as a :class:`SourceDoc`, with ``oumi train``'s overrides applied, and a
reader that marks each key it reads and says where each value came from.

Oumi takes overrides as dotted keys (``oumi train -c FILE --training.max_steps 20``, merged
by OmegaConf); ``ftspec import oumi FILE training.max_steps=20`` takes the same keys as
``KEY=VALUE`` (a leading ``--`` is dropped). The source map points overridden keys at the
argument, so origins and warnings name it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import SpecDraft, not_this_tool
from ftspec.compiler.importers.no_effect import OUMI as OUMI_NO_EFFECT
from ftspec.compiler.importers.oumi_defaults import (
    FSDP_DEFAULTS,
    MODEL_DEFAULTS,
    PEFT_DEFAULTS,
    TOOL,
    TRAINING_DEFAULTS,
)
from ftspec.spec.diagnostics import KeyPath
from ftspec.spec.loader import SourceDoc, load_spec_file
from ftspec.spec.overrides import apply_sets

SECTIONS = ("model", "data", "training", "peft", "fsdp", "deepspeed")
"""``TrainingConfig``'s fields: a key outside them is not an Oumi training config."""
JOB_KEYS = ("resources", "run", "setup", "num_nodes", "envs", "file_mounts")
DEFAULTS: dict[str, dict[str, Any]] = {"model": MODEL_DEFAULTS, "training": TRAINING_DEFAULTS,
                                       "peft": PEFT_DEFAULTS, "fsdp": FSDP_DEFAULTS}


def override_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """``--training.max_steps=20`` or ``training.max_steps=20`` -> the dotted form."""
    return tuple(a.removeprefix("--") for a in args)


def load_oumi(path: Path, args: tuple[str, ...]) -> SourceDoc:
    doc = load_spec_file(path)
    if args:
        doc = apply_sets(doc, list(args))
    check_is_oumi(doc)
    return doc


def check_is_oumi(doc: SourceDoc) -> None:
    data = doc.data
    if not isinstance(data, dict):
        raise not_this_tool(doc, (), "not an Oumi TrainingConfig: the document is not a "
                            "mapping", "give the YAML `oumi train -c` reads")
    if any(k in data for k in JOB_KEYS) and "model" not in data:
        first = next(k for k in data if k in JOB_KEYS)
        raise not_this_tool(doc, (first,), "an Oumi JobConfig, not a TrainingConfig",
                            "give the training config as FILE and this one as --job")
    model = data.get("model")
    if not isinstance(model, dict) or not isinstance(model.get("model_name"), str):
        where: KeyPath = ("model",) if "model" in data else \
            ((next(iter(data)),) if data else ())
        raise not_this_tool(doc, where, "not an Oumi TrainingConfig: no model.model_name",
                            "Oumi's ModelParams name the model with model_name")
    for key in data:
        if key not in SECTIONS:
            raise not_this_tool(doc, (key,), f"not an Oumi TrainingConfig: it has no "
                                f"{key!r} section", "TrainingConfig's sections: "
                                + ", ".join(SECTIONS))


class OumiReader:
    """The source's sections with Oumi's defaults behind them; each key read is marked."""

    def __init__(self, draft: SpecDraft) -> None:
        self.draft = draft
        self.data: dict[str, Any] = draft.source.data
        self.used: set[KeyPath] = set()

    def section(self, name: str) -> dict[str, Any]:
        node = self.data.get(name)
        return node if isinstance(node, dict) else {}

    def has(self, section: str, key: str) -> bool:
        return key in self.section(section)

    def value(self, section: str, key: str) -> Any:
        if self.has(section, key):
            self.used.add((section, key))
            return self.section(section)[key]
        return DEFAULTS.get(section, {}).get(key)

    def origin(self, section: str, key: str) -> str:
        if self.has(section, key):
            return self.draft.origin_of((section, key))
        return f"{TOOL} default ({section}.{key})"

    def put(self, dst: KeyPath, section: str, key: str, convert: Any = None) -> Any:
        value = self.value(section, key)
        if value is None:
            return None
        self.draft.put(dst, convert(value) if convert else value, self.origin(section, key))
        return value

    def warn(self, section: str, key: str, summary: str, hint: str | None = None) -> None:
        self.used.add((section, key))
        path: KeyPath = (section, key) if self.has(section, key) else (section,)
        if section not in self.data:
            path = ()
        self.draft.warn(path, summary, hint)

    def warn_unused(self) -> None:
        """Every key the importer did not read: a warning at its line."""
        for name in ("model", "training", "peft", "fsdp", "deepspeed"):
            for key, value in self.section(name).items():
                if (name, key) in OUMI_NO_EFFECT:
                    self.draft.no_effect((name, key))
                elif (name, key) not in self.used:
                    self.draft.warn((name, key), f"{_shown(value)} has no spec "
                                    "field: not imported")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__}"
