"""Diagnostics: what every stage reports about a spec, pointing at file:line:col."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ftspec.spec.diagnostic_codes import prefix_of
from ftspec.spec.secrets import redact
from ftspec.spec.text import escape_text

KeyPath = tuple["str | int", ...]


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"
    """Nothing to act on (an import's keys that change nothing that trains)."""


@dataclass(frozen=True)
class Span:
    """A 1-based position in a source file (or a pseudo-file such as ``--set``)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def format_path(path: KeyPath) -> str:
    """``("data", "mixture", 0, "uri")`` -> ``data.mixture[0].uri``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a spec.

    ``code`` names the check that produced it (``schema.unknown-field``,
    ``rule.batch-arithmetic`` …) so tests and tools can match on it.
    """

    severity: Severity
    summary: str
    path: KeyPath = ()
    span: Span | None = None
    hint: str | None = None
    detail: str | None = None
    code: str = ""

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def format(self) -> str:
        """The human form: credentials redacted, each line free of control characters."""
        where = _shown(str(self.span)) if self.span else "<unknown>"
        at = f"{_shown(format_path(self.path))}: " if self.path else ""
        text = f"{where}: {self.severity.value}: {at}{_shown(self.summary)}"
        if self.detail:
            text += "".join("\n  " + _shown(line) for line in self.detail.split("\n"))
        if self.hint:
            text += f"\n  hint: {_shown(self.hint)}"
        return text

    def to_json(self) -> dict[str, Any]:
        """The JSON form: credentials redacted (JSON escapes control characters itself)."""
        return {
            "severity": self.severity.value,
            "code": self.code,
            "summary": redact(self.summary),
            "path": redact(format_path(self.path)),
            "file": redact(self.span.file) if self.span else None,
            "line": self.span.line if self.span else None,
            "col": self.span.col if self.span else None,
            "hint": redact(self.hint) if self.hint else self.hint,
            "detail": redact(self.detail) if self.detail else self.detail,
        }


def _shown(text: str) -> str:
    return escape_text(redact(text))


@dataclass
class Diagnostics:
    """An ordered collection; stages append, callers inspect."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, diag: Diagnostic) -> None:
        self.items.append(diag)

    def extend(self, diags: Iterable[Diagnostic]) -> None:
        self.items.extend(diags)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.items)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.is_error]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if not d.is_error]

    def sorted(self) -> list[Diagnostic]:
        """File order: by line, then column; diagnostics without a span last."""

        def key(d: Diagnostic) -> tuple[str, int, int]:
            if d.span is None:
                return ("\uffff", 0, 0)
            return (d.span.file, d.span.line, d.span.col)

        return sorted(self.items, key=key)


@dataclass(frozen=True)
class Findings:
    """Makes a check's diagnostics: path-addressed (no span yet), codes under one prefix
    (one of ``spec.diagnostic_codes.PREFIXES``)."""

    prefix: str

    def __post_init__(self) -> None:
        if prefix_of(self.prefix) is None:
            raise ValueError(f"diagnostic code prefix {self.prefix!r} is not in "
                             "spec.diagnostic_codes.PREFIXES")

    def error(self, path: KeyPath, summary: str, code: str, hint: str | None = None
              ) -> Diagnostic:
        return Diagnostic(Severity.ERROR, summary, path=path, hint=hint,
                          code=f"{self.prefix}.{code}")

    def warning(self, path: KeyPath, summary: str, code: str, hint: str | None = None
                ) -> Diagnostic:
        return Diagnostic(Severity.WARNING, summary, path=path, hint=hint,
                          code=f"{self.prefix}.{code}")


class SpecError(Exception):
    """Raised when a stage cannot go on; carries the diagnostics collected so far."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        first = self.diagnostics[0].format() if self.diagnostics else "invalid spec"
        super().__init__(first)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A Terraform-style hint for a misspelt key or enum value, or None."""
    import difflib

    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f'did you mean "{matches[0]}"?' if matches else None
