"""The validation pipeline: load -> literal-secret scan -> JSON Schema -> model -> rules."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ftspec.spec.diagnostics import Diagnostic, Diagnostics, KeyPath, Severity, SpecError
from ftspec.spec.loader import SourceDoc, load_spec_file

if TYPE_CHECKING:
    from ftspec.spec.model import FineTuneSpec


@dataclass(frozen=True)
class Validated:
    """A spec that went through every check: the typed model (None on errors) and findings."""

    doc: SourceDoc | None
    spec: FineTuneSpec | None
    diagnostics: Diagnostics

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.diagnostics.has_errors


def validate_file(path: Path) -> Validated:
    try:
        doc = load_spec_file(path)
    except SpecError as exc:
        return Validated(None, None, Diagnostics(list(exc.diagnostics)))
    return validate_doc(doc)


def validate_doc(doc: SourceDoc) -> Validated:
    from ftspec.spec.rules.secrets import literal_secrets
    from ftspec.spec.schema_check import check_schema

    diags = Diagnostics()
    secret_findings = [_place(d, doc) for d in literal_secrets(doc.data)]
    diags.extend(secret_findings)
    hidden: set[KeyPath] = {d.path for d in secret_findings}
    schema_findings = [
        d for d in check_schema(doc)
        if not any(d.path[: len(h)] == h for h in hidden)
    ]
    diags.extend(schema_findings)
    if diags.has_errors:
        return Validated(doc, None, diags)
    spec, model_findings = _build_model(doc)
    diags.extend(model_findings)
    if spec is None:
        return Validated(doc, None, diags)
    from ftspec.spec.rules import run_rules

    diags.extend(_place(d, doc) for d in run_rules(spec))
    return Validated(doc, spec if not diags.has_errors else None, diags)


def _place(diag: Diagnostic, doc: SourceDoc) -> Diagnostic:
    if diag.span is not None:
        return diag
    return replace(diag, span=doc.span_of(diag.path))


def _build_model(doc: SourceDoc) -> tuple[FineTuneSpec | None, list[Diagnostic]]:
    """The schema already passed, so pydantic errors here are rare (cross-field types)."""
    from ftspec.spec.model import FineTuneSpec
    from pydantic import ValidationError

    try:
        return FineTuneSpec.model_validate(doc.data), []
    except ValidationError as exc:
        found = []
        for err in exc.errors(include_url=False, include_input=False):
            path: KeyPath = tuple(err["loc"])
            found.append(
                Diagnostic(Severity.ERROR, str(err["msg"]), path=path,
                           span=doc.span_of(path), code=f"model.{err['type']}")
            )
        return None, found


def spec_from_data(data: dict[str, Any]) -> FineTuneSpec:
    """Build a spec from plain data (tests, overlays); raises SpecError on any problem."""
    from ftspec.spec.loader import SourceDoc

    result = validate_doc(SourceDoc("<data>", data))
    if result.spec is None:
        raise SpecError(result.diagnostics.errors)
    return result.spec
