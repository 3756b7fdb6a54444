"""Shorthands for rule diagnostics (codes ``rule.*``)."""

from __future__ import annotations

from ftspec.spec.diagnostics import Findings

_RULE = Findings("rule")
error = _RULE.error
warning = _RULE.warning
