"""JSON Schema check of a loaded document, with errors mapped onto the source map."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity, did_you_mean, format_path
from ftspec.spec.loader import SourceDoc
from ftspec.spec.patterns import EXPLAINED
from ftspec.spec.schema import committed_schema
from ftspec.spec.secrets import find_secret

SECRET_ROOTS = frozenset({"secrets"})
"""Values under these keys are never echoed in messages."""

_JSON_TYPE = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "an empty value (null)",
}
_TYPE_WORD = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "boolean": "true or false",
    "integer": "an integer",
    "number": "a number",
    "null": "null",
}

_ENUM_LISTED = 20
"""Longer enumerations are summarized in messages, not listed."""


@lru_cache(maxsize=1)
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(committed_schema())


def check_schema(doc: SourceDoc) -> list[Diagnostic]:
    """All schema problems of ``doc`` (empty when it conforms)."""
    out: list[Diagnostic] = []
    seen: set[tuple[str, KeyPath]] = set()
    for error in _validator().iter_errors(doc.data):
        for diag in _diagnostics(error, doc):
            key = (diag.summary, diag.path)
            if key not in seen:
                seen.add(key)
                out.append(diag)
    return _drop_explained_missing(out)


def _drop_explained_missing(found: list[Diagnostic]) -> list[Diagnostic]:
    """A misspelt key also leaves its real name missing; the did-you-mean says it all."""
    meant = {
        (d.path[:-1], d.hint.split('"')[1])
        for d in found
        if d.code == "schema.unknown-field" and d.hint and d.hint.count('"') >= 2
    }
    return [
        d for d in found
        if not (d.code == "schema.missing-field" and (d.path, _missing_name(d)) in meant)
    ]


def _missing_name(diag: Diagnostic) -> str:
    return diag.summary.split('"')[1] if diag.summary.count('"') >= 2 else ""


def _describe(value: Any, path: KeyPath) -> str:
    kind = _JSON_TYPE.get(type(value), type(value).__name__)
    if path and path[0] in SECRET_ROOTS:
        return kind
    if isinstance(value, (dict, list)) or value is None:
        return kind
    if isinstance(value, str) and find_secret(value, path) is not None:
        return f"{kind} (value hidden)"
    shown = json.dumps(value, ensure_ascii=False)
    if len(shown) > 40:  # never a prefix: a prefix of a credential is still one
        return f"{kind} of {len(value)} characters" if isinstance(value, str) else kind
    return f"{kind} {shown}"


def _diag(doc: SourceDoc, path: KeyPath, summary: str, code: str, *, key: bool = False,
          hint: str | None = None) -> Diagnostic:
    return Diagnostic(
        Severity.ERROR, summary, path=path, span=doc.span_of(path, key=key), hint=hint, code=code
    )


def _diagnostics(error: Any, doc: SourceDoc) -> Iterator[Diagnostic]:
    """One JSON Schema error as diagnostics, worded for its validator (``_WORDED``)."""
    path: KeyPath = tuple(error.absolute_path)
    validator = error.validator
    if validator in ("anyOf", "oneOf"):
        yield from _branch_errors(error, doc)
        return
    if "propertyNames" in error.relative_schema_path and isinstance(error.instance, str):
        yield _key_error(error, doc, path + (error.instance,))
        return
    worded = _WORDED.get(validator)
    if worded is not None:
        yield from worded(error, doc, path)
        return
    message = error.message if not (path and path[0] in SECRET_ROOTS) else "invalid value"
    yield _diag(doc, path, message, f"schema.{validator}")


def _properties(error: Any) -> dict[str, Any]:
    """The ``properties`` of the schema ``error`` is about."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    props: dict[str, Any] = schema.get("properties", {})
    return props


def _unknown_fields(error: Any, doc: SourceDoc, path: KeyPath) -> Iterator[Diagnostic]:
    """``additionalProperties``: each unknown key, with the field it may be: the same name
    in another section (``shuffle`` under training is ``data.shuffle``), else the nearest
    known name here."""
    known = list(_properties(error))
    where = format_path(path) or "the top level"
    for name in error.instance:
        if name not in known:
            yield _diag(
                doc, path + (name,), f'unknown field "{name}" in {where}',
                "schema.unknown-field", key=True,
                hint=_elsewhere(name, where) or did_you_mean(name, known),
            )


def _elsewhere(name: str, where: str) -> str | None:
    """A hint naming the sections that do have a field ``name``, or None."""
    homes = [p for p in field_index().get(name, ()) if p.rpartition(".")[0] != where]
    if not homes or len(homes) > _HOMES:  # a common name (name, enabled): no guess
        return None
    listed = " or ".join(f'"{p}"' for p in homes)
    sections = " and ".join(p.rpartition(".")[0] or "the top level" for p in homes)
    return f"did you mean {listed}? ({name} is a field of {sections}, not of {where})"


_HOMES = 2
"""A name that is a field of more sections than this is not suggested from elsewhere."""


_INDEX_DEPTH = 4
"""Sections this deep are searched for a misplaced field (``deploy.kubeflow.runtime_ref``)."""


@lru_cache(maxsize=1)
def field_index() -> dict[str, tuple[str, ...]]:
    """Every field name of the spec's schema -> the dotted paths where it is a field
    (objects through ``$ref``; list items and free-form maps are not walked)."""
    schema = committed_schema()
    defs = schema.get("$defs", {})
    index: dict[str, list[str]] = {}

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target: dict[str, Any] = defs.get(ref.removeprefix("#/$defs/"), {})
            return target
        for key in ("anyOf", "oneOf", "allOf"):  # an optional section: its object branch
            for branch in node.get(key) or ():
                found = resolve(branch) if isinstance(branch, dict) else {}
                if found.get("properties"):
                    return found
        return node

    def walk(node: dict[str, Any], prefix: str, depth: int) -> None:
        for key, sub in (resolve(node).get("properties") or {}).items():
            dotted = f"{prefix}.{key}" if prefix else key
            index.setdefault(key, []).append(dotted)
            if depth < _INDEX_DEPTH and isinstance(sub, dict):
                walk(sub, dotted, depth + 1)

    walk(schema, "", 1)
    return {k: tuple(v) for k, v in index.items()}


def _missing_fields(error: Any, doc: SourceDoc, path: KeyPath) -> Iterator[Diagnostic]:
    """``required``: each missing key, with what to add."""
    props = _properties(error)
    instance = error.instance
    for name in error.validator_value:
        if isinstance(instance, dict) and name not in instance:
            where = format_path(path) or "the top level"
            yield _diag(
                doc, path, f'missing required field "{name}" in {where}',
                "schema.missing-field", key=True, hint=_add_hint(name, props.get(name, {})),
            )


def _not_a_choice(error: Any, doc: SourceDoc, path: KeyPath) -> Iterator[Diagnostic]:
    """``enum`` and ``const``: the choices (a long catalog summarized), the nearest one."""
    instance = error.instance
    choices = error.validator_value if error.validator == "enum" else [error.validator_value]
    named = [str(c) for c in choices if c is not None]
    listed = ", ".join(named)
    if len(named) > _ENUM_LISTED:  # a catalog (model families): the hint names the nearest
        listed = f"{len(named)} names ({', '.join(named[:5])}, ...)"
        if path[-1:] == ("family",):
            listed += "; `ftspec explain --families` lists them"
    hint = did_you_mean(str(instance), _suggestable(named, path)) if isinstance(
        instance, str) else None
    yield _diag(
        doc, path, f"invalid value: {_describe(instance, path)}; expected one of: {listed}",
        "schema.enum", hint=hint,
    )


def _suggestable(choices: list[str], path: KeyPath) -> list[str]:
    """The choices a hint may name: for ``model.family`` the catalog's keys and aliases, not
    the -instruct / -base variants it also accepts (each warned as not the catalog's name)."""
    if path[-1:] != ("family",):
        return choices
    from ftspec.spec.catalog.models import VARIANT_ALIASES

    return [c for c in choices if c not in VARIANT_ALIASES]


def _wrong_type(error: Any, doc: SourceDoc, path: KeyPath) -> Iterator[Diagnostic]:
    wanted = error.validator_value
    words = [wanted] if isinstance(wanted, str) else list(wanted)
    expected = " or ".join(_TYPE_WORD.get(w, w) for w in words)
    yield _diag(
        doc, path, f"expected {expected}, got {_describe(error.instance, path)}", "schema.type"
    )


def _out_of_range(error: Any, doc: SourceDoc, path: KeyPath) -> Iterator[Diagnostic]:
    """``minimum``, ``maximum`` and their exclusive forms (``_BOUNDS``)."""
    yield _diag(
        doc, path,
        f"must be {_BOUNDS[error.validator]} {error.validator_value}, got "
        f"{_describe(error.instance, path)}",
        "schema.range",
    )


def _wrong_form(error: Any, doc: SourceDoc, path: KeyPath) -> Iterator[Diagnostic]:
    """``pattern``: the form explained with an example where ``EXPLAINED`` has one."""
    shown = _describe(error.instance, path)
    explained = EXPLAINED.get(error.validator_value)
    if explained is not None:
        summary = f"{shown} is not {explained[0]}"
        hint = f"for example {explained[1]}"
    else:
        summary = f"{shown} does not match the required form"
        hint = f"expected pattern {error.validator_value}"
    yield _diag(doc, path, summary, "schema.pattern", hint=hint)


def _wrong_size(error: Any, doc: SourceDoc, path: KeyPath) -> Iterator[Diagnostic]:
    """``minLength``, ``maxLength``, ``minItems``, ``maxItems``."""
    validator = error.validator
    noun = "characters" if "Length" in validator else "items"
    limit = "at least" if validator.startswith("min") else "at most"
    yield _diag(
        doc, path, f"must have {limit} {error.validator_value} {noun}", "schema.size"
    )


def _key_error(error: Any, doc: SourceDoc, path: KeyPath) -> Diagnostic:
    """A mapping key of the wrong form, located at the key itself."""
    shown = f"key {_describe(path[-1], path)}"
    explained = EXPLAINED.get(error.validator_value) if error.validator == "pattern" else None
    if explained is not None:
        return _diag(doc, path, f"{shown} is not {explained[0]}", "schema.key", key=True,
                     hint=f"for example {explained[1]}")
    if error.validator == "maxLength":
        return _diag(doc, path, f"{shown} is longer than {error.validator_value} characters",
                     "schema.key", key=True)
    return _diag(doc, path, f"{shown} does not have the required form", "schema.key", key=True)


def _add_hint(name: str, prop: dict[str, Any]) -> str:
    if "const" in prop:
        return f"add {name}: {prop['const']}"
    about = str(prop.get("description", "")).split(". ")[0].rstrip(".")
    return f'add "{name}" ({about})' if about else f'add "{name}"'


_BOUNDS = {
    "minimum": ">=",
    "maximum": "<=",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
}


_WORDED: dict[str, Callable[[Any, SourceDoc, KeyPath], Iterator[Diagnostic]]] = {
    "additionalProperties": _unknown_fields,
    "required": _missing_fields,
    "enum": _not_a_choice,
    "const": _not_a_choice,
    "type": _wrong_type,
    **dict.fromkeys(_BOUNDS, _out_of_range),
    "pattern": _wrong_form,
    **dict.fromkeys(("minLength", "maxLength", "minItems", "maxItems"), _wrong_size),
}
"""The validators worded for people; any other says the validator's own message."""


def _branch_errors(error: Any, doc: SourceDoc) -> Iterator[Diagnostic]:
    """``X | None`` fields: report what is wrong against ``X``, not the null branch."""
    branches: dict[int, list[Any]] = {}
    for sub in error.context:
        index = sub.schema_path[0] if sub.schema_path else 0
        branches.setdefault(int(index), []).append(sub)
    options = error.validator_value
    real = [
        i for i, option in enumerate(options)
        if not (isinstance(option, dict) and option.get("type") == "null")
    ]
    if len(real) == 1 and real[0] in branches:
        for sub in branches[real[0]]:
            yield from _diagnostics(sub, doc)
        return
    path: KeyPath = tuple(error.absolute_path)
    yield _diag(
        doc, path, f"{_describe(error.instance, path)} matches none of the allowed forms",
        "schema.any-of",
    )
