"""Credentials only by reference: a value that looks like a token is an error.

This runs on the raw document, before the schema check, and never echoes the value. Each
finding is placed at the value (or the key) and its hint names the reference to write
instead: a ``secrets:`` entry given as a Kubernetes Secret (``secretRef``) or as the name of
an environment variable (``env``), which the job then sees as the variable named after the
entry (``secrets.db_pass`` -> ``DB_PASS``; ``ftspec.targets.kube.secret_env_name``).
Because validation refuses the spec, nothing that runs after it (compile, the compile
cache, ``plan --out``, run records) ever holds the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Span
from ftspec.spec.rules._diag import error
from ftspec.spec.secrets import find_secret, secret_named

_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
"""An environment variable's usual name (``DB_PASS``): its value's reference is named after it."""

HINT = ("reference it instead: secrets: {NAME: {secretRef: {name: SECRET, key: KEY}}} "
        "(a Kubernetes Secret) or secrets: {NAME: {env: VAR}} (an environment variable "
        "set where the job runs)")


def literal_secrets(data: Any, key_spans: Mapping[KeyPath, Span] | None = None
                    ) -> list[Diagnostic]:
    """Every credential-looking key or value. A key finding names the mapping (the key
    itself is never printed) and, given the document's ``key_spans``, points at the key."""
    return list(_walk(data, (), key_spans or {}))


def _walk(node: Any, path: KeyPath, key_spans: Mapping[KeyPath, Span],
          previous: str | None = None) -> Iterator[Diagnostic]:
    if isinstance(node, dict):
        for key, value in node.items():
            what = find_secret(key, path) if isinstance(key, str) else None
            if what is not None:
                found = error(path, f"a key of this mapping looks like {what}; credentials "
                              "may not appear in a spec (key hidden)", "secret-literal",
                              hint=HINT)
                span = key_spans.get(path + (key,))
                yield found if span is None else replace(found, span=span)
                continue
            yield from _walk(value, path + (key,), key_spans)
    elif isinstance(node, list):
        previous = None
        for index, value in enumerate(node):
            yield from _walk(value, path + (index,), key_spans, previous)
            previous = value if isinstance(value, str) else None
    elif isinstance(node, str):
        if len(path) == 2 and path[0] == "secrets":
            yield error(path, "secrets must be references, not literal values (value hidden)",
                        "secret-literal", hint=_reference(str(path[1])))
            return
        what = find_secret(node, path, previous)
        if what is not None:
            yield error(path, f"this looks like {what}; credentials may not appear in a "
                        "spec (value hidden)", "secret-literal", hint=_hint(what, path))


def _hint(what: str, path: KeyPath) -> str:
    if "URL" in what:
        return ("leave the credentials out of the URL: give them to the tool by its own "
                "means (a secret, an environment variable)")
    key = path[-1] if path and isinstance(path[-1], str) else None
    if key is None or not (_ENV_NAME.fullmatch(key) or secret_named(key)):
        return HINT
    return _reference(key)


def _reference(key: str) -> str:
    """The ``secrets:`` entry to write for a credential given under ``key``."""
    entry = re.sub(r"[^a-z0-9_]", "_", key.lower())
    if len(entry) > 64 or not entry.strip("_"):
        return HINT
    var = entry.upper()
    return (f"reference it instead: secrets: {{{entry}: {{secretRef: {{name: SECRET, key: "
            f"KEY}}}}}} (a Kubernetes Secret) or secrets: {{{entry}: {{env: {var}}}}} (the "
            f"variable {var} set where the job runs); the job sees it as {var}")


def secrets_in_import(data: Any, source: Path | None, args: tuple[str, ...] = ()
                      ) -> list[Diagnostic]:
    """Why an imported spec (``data``) may not be written: every credential it would hold.

    Placed in the tool's own file where the file holds them (FILE:LINE:COL; a credential the
    importer dropped is reported there too, it is one all the same), at ``--set[i]`` for the
    tool's ``KEY=VALUE`` arguments, else by the spec path it would have had. Empty when the
    imported spec holds none, whatever the tool's file holds."""
    leaks = literal_secrets(data)
    if not leaks:
        return []
    found: list[Diagnostic] = []
    if source is not None:
        from ftspec.spec.diagnostics import SpecError
        from ftspec.spec.loader import load_spec_file

        try:
            doc = load_spec_file(source)
        except SpecError:
            doc = None
        if doc is not None:
            found += [d if d.span is not None else replace(d, span=doc.span_of(d.path))
                      for d in literal_secrets(doc.data, doc.key_spans)]
    for index, arg in enumerate(args):
        key, _, value = arg.partition("=")
        if find_secret(arg) or find_secret(value, (key.rsplit(".", 1)[-1],)):
            found.append(replace(error((), "this argument holds a credential; credentials may "
                                       "not appear in a spec (text hidden)", "secret-literal",
                                       hint=HINT), span=Span(f"--set[{index}]", 1, 1)))
    return found or [replace(d, summary=f"the imported spec would hold this: {d.summary}")
                     for d in leaks]


def secrets_in_spec_text(text: str, file: str) -> list[Diagnostic]:
    """``secrets_in_import`` for a spec that exists only as text (an adopted live object),
    placed in that text; text that does not parse is refused when ``redact`` changes it."""
    from ftspec.spec.diagnostics import SpecError
    from ftspec.spec.loader import parse_yaml
    from ftspec.spec.secrets import redact

    try:
        doc = parse_yaml(text, file)
    except SpecError:
        if redact(text) == text:
            return []
        return [replace(error((), "the imported spec would hold a credential (text hidden)",
                              "secret-literal", hint=HINT), span=Span(file, 1, 1))]
    return [d if d.span is not None else replace(d, span=doc.span_of(d.path))
            for d in literal_secrets(doc.data, doc.key_spans)]


SECRET_CODES = frozenset({"rule.secret-literal", "override.secret"})
"""The codes of the findings above and of ``--set``'s own refusal (``spec.overrides``)."""


def refused_for_secret(diagnostics: Iterable[Diagnostic]) -> bool:
    """Was a spec refused because it holds a credential? Then nothing of it may be kept
    (the compile cache asks before it stores a result)."""
    return any(d.code in SECRET_CODES for d in diagnostics)
