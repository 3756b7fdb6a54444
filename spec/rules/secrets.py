"""Credentials only by reference: a value that looks like a token is an error.

This runs on the raw document, before the schema check, and never echoes the value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Span
from ftspec.spec.rules._diag import error
from ftspec.spec.secrets import find_secret

HINT = "put it in a Kubernetes Secret and reference it: secrets: {NAME: {secretRef: {name, key}}}"


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
                        "secret-literal", hint=HINT)
            return
        what = find_secret(node, path, previous)
        if what is not None:
            yield error(path, f"this looks like {what}; credentials may not appear in a "
                        "spec (value hidden)", "secret-literal", hint=_hint(what))


def _hint(what: str) -> str:
    if "URL" in what:
        return ("leave the credentials out of the URL: give them to the tool by its own "
                "means (a secret, an environment variable)")
    return HINT
