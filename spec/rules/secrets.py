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
from collections.abc import Iterator, Mapping
from dataclasses import replace
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
