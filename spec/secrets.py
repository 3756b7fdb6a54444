"""What a credential looks like, and how to keep one out of every output.

Two uses, one scan (``ftspec.spec.secret_scan``, linear in the text's length):

- ``find_secret(value, path)`` decides whether a spec value (or mapping key) at ``path`` is a
  credential, so validation can refuse it without echoing it. Context decides the ambiguous
  cases: 40 hex digits are a Git commit id under a key such as ``revision`` or ``commit``
  (or after a ``--revision`` flag) and a possible Weights & Biases key anywhere else; 32 hex
  digits are a checksum or an id under ``md5``, ``checksum``, ``uuid``, ``*_id`` … and a
  possible Azure key anywhere else. A key named like a credential (``password``, ``DB_PASS``,
  ``MY_SERVICE_KEY``, ``WANDB_API_KEY`` … see ``ftspec.spec.secret_names``), or a
  ``--password`` flag before a list item, makes its token-shaped value with a digit one.
- ``redact(text)`` replaces every credential-shaped part of any text (diagnostics, JSON,
  plan values, crash logs, imported specs) with ``<redacted>``, whole, never a prefix.

Our own code, because no well-kept library does both on plain strings without network or
heavy dependencies (detect-secrets scans files and pulls plugins in at import).
"""

from __future__ import annotations

import re
from typing import Any

from ftspec.spec.secret_names import secret_named
from ftspec.spec.secret_scan import (
    CHECKSUM_WORDS,
    COMMIT_WORDS,
    HEX32,
    HEX40,
    NAMED,
    Hit,
    scan,
)

__all__ = ["REDACTED", "find_secret", "redact", "redact_data", "secret_named"]

REDACTED = "<redacted>"

_TOKEN_SHAPED = re.compile(r"[A-Za-z0-9_\-+/=.~:]{8,}")


def _last_key(path: tuple[Any, ...]) -> str | None:
    for part in reversed(path):
        if isinstance(part, str):
            return part
    return None


def _context(name: str | None, words: re.Pattern[str]) -> bool:
    """Does ``name`` start or end with one of ``words`` (``model_revision``, ``md5sum``)?"""
    if not name:
        return False
    squashed = re.sub(r"[^a-z0-9]", "", name.lower())
    return bool(words.match(squashed)) or any(
        words.fullmatch(squashed, i) for i in range(max(0, len(squashed) - 12), len(squashed)))


def _flag(previous: str | None) -> str | None:
    """``--revision`` / ``-p`` before a list item: the flag's name."""
    if previous is None or not previous.startswith("-") or "=" in previous:
        return None
    return previous.lstrip("-")


def credential_value(value: str) -> bool:
    """Could ``value`` be a password or key given under a credential's name? One token of
    at least 8 characters with a digit, not a reference (``$VAR``, ``{…}``), a path or a URL."""
    return _TOKEN_SHAPED.fullmatch(value) is not None and any(c.isdigit() for c in value) \
        and not value.startswith(("$", "{", "/", "./", "~/")) and "://" not in value


def _accepted(hit: Hit, value: str, commit: bool, checksum: bool) -> bool:
    """A hit that the context says is not a credential."""
    if hit.kind == HEX40:
        return commit or hit.in_context
    if hit.kind == HEX32:
        return checksum or hit.in_context
    if hit.kind == NAMED:
        return not credential_value(value[hit.start:hit.end])
    return False


def find_secret(value: str, path: tuple[Any, ...] = (), previous: str | None = None
                ) -> str | None:
    """What credential ``value`` holds (``"a Hugging Face token"`` …), or None.

    ``path`` is where it lies (its last key gives the context); ``previous`` is the list
    item before it, so ``["--revision", "<40 hex>"]`` reads as a commit id and
    ``["--password", "…"]`` as a credential.
    """
    key = _last_key(path)
    flag = _flag(previous)
    before = previous.lstrip("-").split("=")[0] if previous else None
    commit = _context(key, COMMIT_WORDS) or _context(before, COMMIT_WORDS)
    checksum = commit or _context(key, CHECKSUM_WORDS) or _context(before, CHECKSUM_WORDS)
    for hit in scan(value):
        if not _accepted(hit, value, commit, checksum):
            what: str = hit.what
            return what
    for name in (key, flag):
        if name is not None and secret_named(name) and credential_value(value):
            return f"a credential (the value of {name!r})"
    return None


def redact(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``<redacted>``.

    Without context, 40 (32) hex digits are redacted too unless a commit (checksum) word
    (``revision``, ``commit``, ``sha`` … ``md5``, ``uuid``, ``id`` …) stands right before
    them; a value after a credential's name (``password=…``, ``"api_key": "…"``) is
    redacted whatever its shape.
    """
    spans: list[tuple[int, int]] = []
    for hit in scan(text):
        if hit.kind in (HEX40, HEX32) and hit.in_context:
            continue
        if spans and hit.start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], hit.end))
        else:
            spans.append((hit.start, hit.end))
    if not spans:
        return text
    out, done = [], 0
    for start, end in spans:
        out += [text[done:start], REDACTED]
        done = end
    return "".join(out) + text[done:]


def redact_data(data: Any) -> Any:
    """``redact`` over every string (keys too) of a JSON-like value."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {redact_data(k): redact_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_data(v) for v in data]
    return data
