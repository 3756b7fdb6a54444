"""Shorthands for rule diagnostics."""

from __future__ import annotations

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity


def error(path: KeyPath, summary: str, code: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic(Severity.ERROR, summary, path=path, hint=hint, code=f"rule.{code}")


def warning(path: KeyPath, summary: str, code: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic(Severity.WARNING, summary, path=path, hint=hint, code=f"rule.{code}")
