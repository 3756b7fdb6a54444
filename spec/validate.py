"""The validation pipeline: load -> literal-secret scan -> JSON Schema -> model -> rules.

``validate_doc(doc)`` always runs the JSON Schema check (``ftspec validate`` and the
pre-commit hook promise exactly that). The live commands (plan, apply, destroy, status,
logs) call ``validate_doc(doc, schema="on-error")``: the model is tried first, in pydantic's
*strict* JSON mode, and the JSON Schema check (importing jsonschema costs ~0.1 s) runs only
when that model rejects the document, to produce the usual diagnostics. Why the two ways
accept exactly the same specs:

* the committed schema is generated from these models (``tests/spec/test_schema.py`` keeps
  ``schemas/ftspec.schema.json`` equal to ``generate_schema()``), and the models carry no
  validators of their own, so every constraint of one is a constraint of the other: types,
  ``extra="forbid"`` = ``additionalProperties: false``, required fields, ``Literal`` =
  ``enum``/``const``, length, range and ``pattern`` bounds;
* strict JSON mode does none of the lax coercions JSON Schema would refuse ("3" for an int,
  "true" for a bool, 1 for a string); an int is taken for a float in both;
* the data is handed over as JSON text, so YAML-only values (dates, non-string keys, NaN)
  cannot be accepted by the model: ``_as_json`` refuses them and the full pipeline runs.

Where strict pydantic is the stricter one (an int-valued float like ``3.0`` for an integer
field, a trailing newline before ``$`` in a pattern), the fast path falls back to the full
pipeline, whose result is the one ``validate`` gives. So the only thing skipped is a schema
check that cannot find anything; ``tests/spec/test_validate_fast.py`` checks both paths
agree on every example and every invalid case.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

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
    model: FineTuneSpec | None = None
    """The typed model whenever the schema and pydantic accepted the document, whatever the
    rules found (``spec`` is it only when nothing is wrong)."""

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.diagnostics.has_errors

    @property
    def derivable(self) -> bool:
        """A Job can be derived from ``model``: none of the rules it rests on failed
        (``ftspec.spec.rules.PREREQUISITES``), so the targets can check it too."""
        if self.model is None:
            return False
        from ftspec.spec.rules import PREREQUISITES

        return not any(d.code in PREREQUISITES for d in self.diagnostics.errors)


def validate_file(path: Path) -> Validated:
    try:
        doc = load_spec_file(path)
    except SpecError as exc:
        return Validated(None, None, Diagnostics(list(exc.diagnostics)))
    return validate_doc(doc)


SchemaMode = Literal["always", "on-error"]


def validate_doc(doc: SourceDoc, schema: SchemaMode = "always") -> Validated:
    """Every check of ``doc``; ``schema="on-error"``: see the module docstring."""
    from ftspec.spec.rules.secrets import literal_secrets

    diags = Diagnostics()
    secret_findings = [_place(d, doc) for d in literal_secrets(doc.data, doc.key_spans)]
    diags.extend(secret_findings)
    if schema == "on-error" and not diags.has_errors:
        spec = _strict_model(doc.data)
        if spec is not None:
            return _with_rules(doc, spec, diags)
    return _full(doc, diags, {d.path for d in secret_findings})


def _full(doc: SourceDoc, diags: Diagnostics, hidden: set[KeyPath]) -> Validated:
    from ftspec.spec.schema_check import check_schema

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
    return _with_rules(doc, spec, diags)


def _with_rules(doc: SourceDoc, spec: FineTuneSpec, diags: Diagnostics) -> Validated:
    from ftspec.spec.rules import run_rules
    from ftspec.spec.rules.family_name import family_variant

    diags.extend(_place(d, doc) for d in [*family_variant(doc.data), *run_rules(spec)])
    return Validated(doc, spec if not diags.has_errors else None, diags, spec)


def _as_json(data: Any) -> str | None:
    """``data`` as JSON text, or None when it holds anything JSON cannot say as it is."""
    import json

    def plain(node: Any) -> bool:
        if isinstance(node, dict):
            return all(isinstance(k, str) and plain(v) for k, v in node.items())
        if isinstance(node, list):
            return all(plain(v) for v in node)
        return node is None or isinstance(node, (str, bool, int, float))

    if not plain(data):
        return None
    try:
        return json.dumps(data, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _strict_model(data: Any) -> FineTuneSpec | None:
    """The model in strict JSON mode, or None when it rejects ``data`` (any reason)."""
    from ftspec.spec.model import FineTuneSpec
    from pydantic import ValidationError

    text = _as_json(data)
    if text is None:
        return None
    try:
        return FineTuneSpec.model_validate_json(text, strict=True)
    except ValidationError:
        return None


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
