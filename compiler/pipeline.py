"""Validated spec -> Job -> one target's artifacts, with the target's diagnostics placed.

``compile_spec`` is what `ftspec compile`, `plan` and `apply` share: it builds the Job once,
runs the target's checks (their key paths resolved to file:line:col through the spec's
source map) and compiles only when no check reported an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ftspec.compiler.build import build_job
from ftspec.compiler.dispatch import check_job, compile_job, default_target
from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.ir import Job
from ftspec.spec.validate import Validated
from ftspec.targets.base import Artifact


def target_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"ftspec.targets.{name}") is not None


@dataclass(frozen=True)
class Compiled:
    job: Job
    target: str
    artifacts: list[Artifact] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def place(diags: list[Diagnostic], validated: Validated) -> list[Diagnostic]:
    """Give target diagnostics (key paths only) their position in the spec."""
    doc = validated.doc
    if doc is None:
        return diags
    return [d if d.span is not None else replace(d, span=doc.span_of(d.path)) for d in diags]


def compile_spec(validated: Validated, source: Path | None, target: str | None = None
                 ) -> Compiled:
    """Compile a valid spec (``validated.ok``) for ``target`` (default: deploy.target's)."""
    assert validated.spec is not None, "compile_spec needs a valid spec"
    job = build_job(validated.spec, source)
    name = target or default_target(job)
    if not target_available(name):
        path = ("deploy", "target") if target is None else ()
        return Compiled(job, name, [], place([Diagnostic(
            Severity.ERROR, f"target {name} is not available in this installation",
            path=path, code="compile.target-missing")], validated))
    diags = place(check_job(job, name), validated)
    if any(d.is_error for d in diags):
        return Compiled(job, name, [], diags)
    return Compiled(job, name, compile_job(job, name), diags)
