"""Credentials only by reference: a value that looks like a token is an error.

This runs on the raw document, before the schema check, and never echoes the value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath
from ftspec.spec.rules._diag import error
from ftspec.spec.secrets import find_secret

HINT = "put it in a Kubernetes Secret and reference it: secrets: {NAME: {secretRef: {name, key}}}"


def literal_secrets(data: Any) -> list[Diagnostic]:
    return list(_walk(data, ()))


def _walk(node: Any, path: KeyPath, previous: str | None = None) -> Iterator[Diagnostic]:
    if isinstance(node, dict):
        for key, value in node.items():
            what = find_secret(key, path) if isinstance(key, str) else None
            if what is not None:
                yield error(path, f"a key of this mapping looks like {what}; credentials may "
                            "not appear in a spec (key hidden)", "secret-literal", hint=HINT)
                continue
            yield from _walk(value, path + (key,))
    elif isinstance(node, list):
        previous = None
        for index, value in enumerate(node):
            yield from _walk(value, path + (index,), previous)
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
