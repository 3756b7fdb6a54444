"""Credentials only by reference: a value that looks like a token is an error.

This runs on the raw document, before the schema check, and never echoes the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath
from ftspec.spec.rules._diag import error

TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("an AWS access key", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(ghp|gho|ghs|ghu)_[A-Za-z0-9]{30,}|github_pat_\w{40,}")),
    ("an API key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("a Weights & Biases key", re.compile(r"^[0-9a-f]{40}$")),
)

HINT = "put it in a Kubernetes Secret and reference it: secrets: {NAME: {secretRef: {name, key}}}"


def literal_secrets(data: Any) -> list[Diagnostic]:
    return list(_walk(data, ()))


def _walk(node: Any, path: KeyPath) -> Iterator[Diagnostic]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, path + (index,))
    elif isinstance(node, str):
        if len(path) == 2 and path[0] == "secrets":
            yield error(path, "secrets must be references, not literal values (value hidden)",
                        "secret-literal", hint=HINT)
            return
        for what, pattern in TOKEN_PATTERNS:
            if pattern.search(node):
                yield error(path, f"this looks like {what}; credentials may not appear in a "
                            "spec (value hidden)", "secret-literal", hint=HINT)
                return
