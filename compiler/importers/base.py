"""What every importer produces: a spec document, where each value came from, and warnings.

An importer reads another tool's config (a :class:`SourceDoc`, positions from ruamel.yaml
through ftspec's own loader) and fills a :class:`SpecDraft`: the spec's data plus, for each
key path, the origin written next to it as a comment (``from FILE:LINE``, or the tool's
default and the version the default was read from). What it cannot express becomes a warning
that points at the source line; a file that is not the tool's config raises
:class:`NotThisTool` with FILE:LINE:COL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ftspec.spec.diagnostics import (
    Diagnostic,
    KeyPath,
    Severity,
    Span,
    SpecError,
    format_path,
)
from ftspec.spec.loader import SourceDoc


class NotThisTool(SpecError):
    """The file is not a config of the tool named on the command line."""


def not_this_tool(doc: SourceDoc, path: KeyPath, summary: str, hint: str) -> NotThisTool:
    return NotThisTool([Diagnostic(Severity.ERROR, summary, path=path,
                                   span=doc.span_of(path, key=True), hint=hint,
                                   code="import.not-this-tool")])


def unsupported(doc: SourceDoc, path: KeyPath, summary: str, hint: str) -> SpecError:
    """A refusal at the source key that asks for what the spec cannot train."""
    return SpecError([Diagnostic(Severity.ERROR, summary, path=path,
                                 span=doc.span_of(path, key=True), hint=hint,
                                 code="import.unsupported")])


def unexpected_args(tool: str, args: tuple[str, ...]) -> None:
    """Tools whose configs take no KEY=VALUE overrides on the import command line."""
    if args:
        raise SpecError([Diagnostic(Severity.ERROR, f"`ftspec import {tool}` takes no "
                                    f"KEY=VALUE arguments (got {args[0]!r})",
                                    span=Span("<command line>", 1, 1),
                                    code="import.args")])


_FROM = re.compile(r"\bfrom (?P<file>.+?):(?P<line>\d+)(?=$|[\s);,])")
"""An origin comment's ``from FILE:LINE`` (which an explanation may follow)."""


@dataclass
class SpecDraft:
    """The spec being written: nested data, origins by spec key path, warnings."""

    source: SourceDoc
    args: tuple[str, ...] = ()
    """The tool's command-line overrides, which ``--set[i]`` spans point at."""
    data: dict[str, Any] = field(default_factory=dict)
    origins: dict[KeyPath, str] = field(default_factory=dict)
    warnings: list[Diagnostic] = field(default_factory=list)
    consumed: set[str] = field(default_factory=set)
    """Top-level source keys read outside the tool's reader (``topology``: ``use_cpu``)."""
    inert: list[KeyPath] = field(default_factory=list)
    """Source keys that change nothing that trains (:meth:`no_effect`)."""

    def put(self, path: KeyPath, value: Any, origin: str) -> None:
        node: dict[Any, Any] = self.data
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        self.origins[path] = origin

    def get(self, path: KeyPath) -> Any:
        node: Any = self.data
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def take(self, src: KeyPath, dst: KeyPath, convert: Any = None) -> bool:
        """Copy the source value at ``src`` to the spec at ``dst``; False when absent."""
        if not has(self.source.data, src):
            return False
        value = self.source.value_at(src)
        self.put(dst, convert(value) if convert else value, self.origin_of(src))
        return True

    def origin_of(self, src: KeyPath) -> str:
        span = self.source.span_of(src, key=True)
        if span.file.startswith("--set[") and span.file.endswith("]"):
            index = int(span.file[6:-1])
            if 0 <= index < len(self.args):
                return f"from the argument {self.args[index]}"
        return f"from {span.file}:{span.line}"

    def no_effect(self, src: KeyPath) -> None:
        """A source key that changes nothing that trains (logging verbosity, preprocessing
        workers, a class the tool infers anyway): listed once, in :meth:`diagnostics`'
        note, not warned."""
        if src not in self.inert:
            self.inert.append(src)

    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """The warnings, then one note naming every :meth:`no_effect` key with its line."""
        if not self.inert:
            return tuple(self.warnings)
        spans = [self.source.span_of(k, key=True) for k in self.inert]
        keys = ", ".join(f"{format_path(k)} (line {s.line})"
                         for k, s in zip(self.inert, spans, strict=True))
        note = Diagnostic(Severity.NOTE, f"no effect on training, not imported: {keys}",
                          span=spans[0], code="import.no-effect")
        return (*self.warnings, note)

    def span_for_spec(self, path: KeyPath) -> Span:
        """The source key the spec value at ``path`` came from (its origin's ``from
        FILE:LINE``), else that of its nearest section or of a key beside it there; the
        file's first line when none did (a tool's default)."""
        for end in range(len(path), 0, -1):
            probe = path[:end]
            under = [o for p, o in self.origins.items() if p[:end] == probe and p != probe]
            for origin in [self.origins.get(probe, "")] + under:
                match = _FROM.search(origin)
                if match and match["file"] == self.source.file:
                    line = int(match["line"])
                    spans = [s for s in self.source.key_spans.values()
                             if s.file == self.source.file and s.line == line]
                    return min(spans, key=lambda s: s.col) if spans else \
                        Span(self.source.file, line, 1)
        return Span(self.source.file, 1, 1)

    def warn(self, src: KeyPath, summary: str, hint: str | None = None) -> None:
        span = self.source.span_of(src, key=True) if src else Span(self.source.file, 1, 1)
        self.warnings.append(Diagnostic(Severity.WARNING, summary, path=src, span=span,
                                        hint=hint, code="import.not-expressed"))


def has(data: Any, path: KeyPath) -> bool:
    node = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


@dataclass(frozen=True)
class Imported:
    """An importer's result: the spec as YAML text (with origin comments) and warnings."""

    tool: str
    text: str
    data: dict[str, Any]
    warnings: tuple[Diagnostic, ...] = ()
    draft: SpecDraft | None = field(default=None, compare=False, repr=False)
    """The draft the text was rendered from (``aim`` edits a copy for ``--target``)."""
    head: tuple[str, ...] = ()
    """The header comment lines above the spec."""


_SUFFIXES = ("-instruct", "-chat", "-hf", "-base", "-it")
_DERIVED_TAGS = ("-fp16", "-bf16", "-fp32", "-bnb-nf4-bf16", "-bnb-nf4", "-bnb-4bit", "-nf4",
                 "-4bit", "-8bit", "-awq", "-gptq", "-gguf", "-unsloth")
"""Tags re-uploads add to a catalog model's name (precision, quantization, packager)."""
_DISTILLS = {"deepseek-r1-distill-qwen-1.5b": "qwen2_5-1.5b",
             "deepseek-r1-distill-qwen-7b": "qwen2_5-7b",
             "deepseek-r1-distill-qwen-14b": "qwen2_5-14b",
             "deepseek-r1-distill-qwen-32b": "qwen2_5-32b",
             "deepseek-r1-distill-llama-8b": "llama3_1-8b",
             "deepseek-r1-distill-llama-70b": "llama3_3-70b",
             "phi-4-reasoning": "phi4-14b", "phi-4-reasoning-plus": "phi4-14b"}
"""DeepSeek-R1's distilled models and the base each was trained from (the DeepSeek-R1 model
card: Qwen2.5-Math-1.5B/7B, Qwen2.5-14B/32B, Llama-3.1-8B, Llama-3.3-70B-Instruct), and
Phi-4-reasoning(-plus), fine-tuned from Phi-4 (their model card): the same architecture and
numbers as these catalog families."""


def _norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch == ".")


def family_for_hub_id(model_id: str) -> str | None:
    """The catalog family whose name matches a hub id's last part (``Qwen/Qwen2.5-0.5B``:
    ``qwen2_5-0.5b``), ignoring an -Instruct/-chat/-hf/-base/-it suffix and a release tag
    (``Qwen3-4B-Instruct-2507``); None if none does. See :func:`match_family`."""
    found = match_family(model_id)
    return found[0] if found else None


def match_family(model_id: str) -> tuple[str, bool] | None:
    """(family, exact) for a hub id or folder name: exact when the name itself (less the
    suffixes above) is the family's; not exact when it differs from a catalog name by
    -instruct / -base (``VARIANT_ALIASES``), a re-upload's precision / quantization tag
    (:data:`_DERIVED_TAGS`) had to go, or a distill names its base (:data:`_DISTILLS`)."""
    from ftspec.spec.catalog.models import MODEL_FAMILIES, VARIANT_ALIASES

    names: dict[str, str] = {}
    for key, fam in MODEL_FAMILIES.items():
        names.setdefault(_norm(fam.display), key)
        names.setdefault(_norm(key.replace("_", ".")), key)
    last = model_id.rstrip("/").rsplit("/", 1)[-1].lower().removeprefix("meta-")
    if last in _DISTILLS:
        return _DISTILLS[last], False
    exact = True
    while True:
        tag = last.rsplit("-", 1)
        if len(tag) == 2 and len(tag[1]) == 4 and tag[1].isdigit():
            last = tag[0]
        for suffix in ("",) + _SUFFIXES:
            if last.endswith(suffix):
                found = names.get(_norm(last[:len(last) - len(suffix)]))
                if found is not None:
                    return found, exact
        if last in VARIANT_ALIASES:  # granite-34b-code-instruct: granite-34b-code-base
            return VARIANT_ALIASES[last], False
        derived = next((t for t in _DERIVED_TAGS if last.endswith(t)), None)
        if derived is not None:
            last, exact = last[:-len(derived)], False
            continue
        shorter = _base_name(last)
        if shorter is None:
            return None
        last, exact = shorter, False


_SIZE = re.compile(r"-(\d+x)?\d+(\.\d+)?[bm]$")
"""A parameter count closing a model name (``-7b``, ``-0.5b``, ``-135m``, ``-8x7b``)."""
_LINES = ("-coder", "-math")
"""Qwen2.5's code and math lines: Qwen2.5-Coder and Qwen2.5-Math keep Qwen2.5's architecture
at each size (their model cards give Qwen2.5's layer and head counts), trained on other data."""


def _base_name(name: str) -> str | None:
    """The name of the model ``name`` derives from, by two rules; None when neither applies:
    words after the parameter count are a derivative's (``qwen2.5-math-7b-rope-300k``: its
    RoPE base changed, the layers did not), and a line tag (:data:`_LINES`) names a
    specialist trained from the family's architecture (``qwen2.5-coder-7b``)."""
    parts = name.split("-")
    for end in range(len(parts) - 1, 1, -1):
        head = "-".join(parts[:end])
        if _SIZE.search(head):
            return head
    for line in _LINES:
        if line + "-" in name:
            return name.replace(line + "-", "-", 1)
    return None


def layer_class_names(value: object) -> str:
    """An FSDP layer-class setting as accelerate matches it: class names, comma-separated
    (``transformers.models.qwen2.modeling_qwen2.Qwen2DecoderLayer`` -> ``Qwen2DecoderLayer``;
    a list is joined). The spec checks the name against the model's decoder layer."""
    names = value if isinstance(value, list) else str(value).split(",")
    return ",".join(str(n).strip().rsplit(".", 1)[-1] for n in names if str(n).strip())
