"""Import -> validate -> compile (accelerate) -> compare, for the corpora of tools whose
configs are read as data (axolotl, LLaMA-Factory).

The compiled ``sft.yaml`` is read back by TRL's own argument parser (``SFTConfig``,
``ModelConfig``, ``ScriptArguments``), so a compared value is what TRL would train with. The
expected value of each hyper-parameter is the source's, or the tool's default where the
source leaves it out; a comparison whose source key the importer warned about is counted as
warned instead (the warning is asserted to exist, at that key's line).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import Imported
from ftspec.compiler.pipeline import CompileOptions, compile_spec
from ftspec.spec.loader import parse_yaml
from ftspec.spec.validate import validate_doc

from helpers.trl_parse import accelerate_reads, compiled_files, trl_reads

Expect = Callable[[dict[str, Any]], Any]
"""The expected value from the source mapping (defaults filled in)."""


@dataclass(frozen=True)
class Read:
    """What the compiled job trains with: TRL's parse of sft.yaml, and prepare.json."""

    script: Any
    sft: Any
    model: Any
    prepare: dict[str, Any]
    accelerate: dict[str, Any] = field(default_factory=dict)
    """accelerate.yaml as accelerate's own loader reads it."""

    @property
    def checkpointing(self) -> bool:
        """Activation checkpointing: TRL's flag, or FSDP's own (which replaces it)."""
        fsdp = self.accelerate.get("fsdp_config") or {}
        return bool(self.sft.gradient_checkpointing
                    or fsdp.get("fsdp_activation_checkpointing"))


Got = Callable[[Read], Any]


@dataclass
class Outcome:
    imported: bool = False
    validated: bool = False
    compiled: bool = False
    diffs: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    warned: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return self.compiled and not self.diffs


def check(path: Path, importer: Callable[[Path], Imported], source: dict[str, Any],
          fields: dict[str, tuple[str, Expect, Got]]) -> Outcome:
    """``fields``: name -> (source key, expected, got)."""
    out = Outcome()
    imported = importer(path)
    out.imported = not any(w.is_error for w in imported.warnings)
    doc = parse_yaml(imported.text, f"{path.name}.ftspec.yaml")
    validated = validate_doc(doc)
    out.validated = validated.ok
    out.errors = [d.format() for d in validated.diagnostics.items if d.is_error]
    compiled = compile_spec(doc, "artifacts", CompileOptions(target="accelerate"))
    out.compiled = compiled.ok
    if not compiled.ok:
        out.errors += [d.format() for d in compiled.diagnostics if d.is_error]
        return out
    files = compiled_files(imported.text, path.name)
    read = Read(*trl_reads(files["sft.yaml"])[:3], files["prepare.json"],
                accelerate_reads(files["accelerate.yaml"]))
    warned_at = {w.path[0] for w in imported.warnings if w.path}
    for name, (key, expect, got) in fields.items():
        if key in warned_at:
            out.warned.append(name)
            continue
        want, have = expect(source), got(read)
        if want != have:
            out.diffs[name] = (want, have)
    return out


def source_of(path: Path) -> dict[str, Any]:
    """The config as its tool reads it: a flat mapping, null values unset."""
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load(path.read_text())
    return {k: v for k, v in data.items() if v is not None}


def from_source(defaults: Callable[[str], Any]) -> Callable[..., Expect]:
    """``expect(key, convert)``: the source's value at ``key``, else ``defaults(key)``."""
    def expect(key: str, convert: Any = None) -> Expect:
        def value(s: dict[str, Any]) -> Any:
            found = s[key] if s.get(key) is not None else defaults(key)
            return convert(found) if convert else found
        return value
    return expect


def trl_value(name: str, convert: Any = None) -> Got:
    """The value TRL reads for ``name`` (SFTConfig, else ModelConfig), enums as values."""
    def got(r: Read) -> Any:
        value = getattr(r.sft, name, None)
        value = getattr(r.model, name) if value is None and hasattr(r.model, name) else value
        value = getattr(value, "value", value)
        return convert(value) if convert else value
    return got


def figures(tool: str, outs: list[Outcome]) -> tuple[list[int], set[str]]:
    """[imported, validated, compiled, equal] and the fields warned, printed as the line the
    import reference (docs/reference/import-and-models.md) quotes."""
    counts = [sum(o.imported for o in outs), sum(o.validated for o in outs),
              sum(o.compiled for o in outs), sum(o.equal for o in outs)]
    warned = {f for o in outs for f in o.warned}
    exact = sum(o.equal and not o.warned for o in outs)
    with_warning = sum(o.equal and bool(o.warned) for o in outs)
    silent = sum(o.compiled and bool(o.diffs) for o in outs)
    print(f"{tool} corpus: {counts[0]} imported, {counts[1]} validated, {counts[2]} "
          f"compiled, {counts[3]} equal ({exact} on every field, {with_warning} warned), "
          f"{silent} silent (warned, not compared: {sorted(warned)})")
    return counts, warned


@dataclass
class Corpus:
    """One tool's corpus folder (with its SOURCES file) and how its configs are checked."""

    tool: str
    folder: Path
    importer: Callable[[Path], Imported]
    fields: dict[str, tuple[str, Expect, Got]]
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    outside_catalog: frozenset[str] = frozenset()
    """Configs of models outside the catalog: imported, refused by validate until
    ``model.architecture`` is added (the import's warning says which numbers)."""
    nested: tuple[str, ...] = ()
    """Configs kept in a sub-folder with the files they name (the tool's own layout), as
    paths relative to ``folder``."""

    @property
    def configs(self) -> list[str]:
        return sorted([p.name for p in self.folder.iterdir() if p.suffix in (".yml", ".yaml")]
                      + list(self.nested))

    def outcome(self, name: str) -> Outcome:
        if name not in self.outcomes:
            path = self.folder / name
            self.outcomes[name] = check(path, self.importer, source_of(path), self.fields)
        return self.outcomes[name]

    def assert_sources_named(self, at_least: int) -> None:
        sources = (self.folder / "SOURCES").read_text()
        assert len(self.configs) >= at_least
        assert [n for n in self.configs if n not in sources] == []

    def assert_equal(self, name: str) -> None:
        out = self.outcome(name)
        if name in self.outside_catalog:
            assert out.imported and not out.validated
            assert any("model.family" in e and "model.architecture" in e for e in out.errors)
            return
        assert (out.imported, out.validated, out.compiled) == (True, True, True), out.errors
        assert out.diffs == {}

    def assert_figures(self, may_warn: set[str]) -> None:
        counts, warned = figures(self.tool, [self.outcome(n) for n in self.configs])
        n, known = len(self.configs), len(self.configs) - len(self.outside_catalog)
        assert counts == [n, known, known, known]
        assert warned <= may_warn


def trainable(key: str, default: Any = None) -> Got:
    """A value of prepare.json's ``trainable`` (LoRA+, freezing): what the entrypoint
    applies (absent: ``default``, the behaviour without it)."""
    return lambda r: (r.prepare.get("trainable") or {}).get(key, default)


PEFT_LORAPLUS_EMBEDDING = 1e-6
"""PEFT's ``create_loraplus_optimizer`` default for ``loraplus_lr_embedding``, which axolotl
and LLaMA-Factory share."""


def loraplus(s: dict[str, Any], key: str) -> Any:
    """LoRA+'s ratio / embedding rate as the tool applies them (None: no LoRA+)."""
    if s.get("loraplus_lr_ratio") is None or not (s.get("adapter") or s.get(
            "finetuning_type", "lora") == "lora"):
        return None
    if key == "loraplus_lr_ratio":
        return float(s[key])
    return float(s.get(key, PEFT_LORAPLUS_EMBEDDING))


def compiled_loraplus(key: str) -> Got:
    def got(r: Read) -> Any:
        entry = r.prepare.get("trainable") or {}
        if "loraplus_lr_ratio" not in entry:
            return None
        return entry.get(key, PEFT_LORAPLUS_EMBEDDING)
    return got


def selected(patterns: list[str] | None, names: list[str]) -> list[str] | None:
    """The parameter names the spec's patterns leave trainable (re.match; None: all)."""
    import re

    if not patterns:
        return None
    return [n for n in names if any(re.match(p, n) for p in patterns)]
