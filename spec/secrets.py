"""What a credential looks like, and how to keep one out of every output.

Two uses, one set of patterns:

- ``find_secret(value, path)`` decides whether a spec value (or mapping key) at ``path`` is a
  credential, so validation can refuse it without echoing it. Context decides the ambiguous
  case: 40 lowercase hex digits are a Git commit id under a key such as ``revision`` or
  ``commit`` (or after a ``--revision`` flag), and a possible Weights & Biases key anywhere
  else. A key named like a credential (``password``, ``api_key``, ``WANDB_API_KEY`` …) makes
  its token-shaped string value one.
- ``redact(text)`` replaces every credential-shaped substring of any text (diagnostics,
  JSON, plan values, crash logs) with ``<redacted>``, whole, never a prefix.

Our own code, because no well-kept library does both on plain strings without network or
heavy dependencies (detect-secrets scans files and pulls plugins in at import).
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"

_B64 = r"A-Za-z0-9+/"
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a PEM private key", re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
        re.DOTALL)),
    ("a password in a URL", re.compile(r"(?<=://)[^/\s:@?#]*:[^/\s@?#]+(?=@)")),
    ("a JSON Web Token", re.compile(
        r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{30,}|"
                                  r"\bgithub_pat_\w{40,}")),
    ("an API key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("a Kubernetes bootstrap token", re.compile(r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b")),
    # 40 base64 characters with upper case, lower case and a digit: an AWS secret key
    ("an AWS secret key", re.compile(
        rf"(?<![{_B64}])(?=[{_B64}]*[A-Z])(?=[{_B64}]*[a-z])(?=[{_B64}]*[0-9])"
        rf"[{_B64}]{{40}}(?![{_B64}=])")),
)
"""Credential formats recognised anywhere in a string."""

HEX40 = re.compile(r"(?<![0-9A-Za-z])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{40}"
                   r"(?![0-9A-Za-z])")
"""A Git commit id or a Weights & Biases API key (random: both digits and letters), the
context tells which."""

_COMMIT_WORDS = ("revision", "commit", "sha", "githash", "gitref", "ref", "digest", "hash")
_SECRET_WORDS = ("password", "passwd", "secret", "token", "apikey", "accesskey", "privatekey",
                 "credential", "bearer", "authorization")
_NOT_SECRET_KEYS = frozenset({"pad_token", "eos_token", "bos_token", "unk_token", "key",
                              "tokenizer", "num_virtual_tokens", "special_tokens_uri",
                              "secretref", "secrets", "add_eos_token", "add_bos_token"})
_TOKEN_SHAPED = re.compile(r"[A-Za-z0-9_\-+/=.~:]{8,}")


def _words(key: str) -> str:
    """``WANDB_API_KEY`` / ``wandbApiKey`` -> ``wandbapikey``."""
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _commit_context(key: str) -> bool:
    words = _words(key)
    return any(words.endswith(w) or words.startswith(w) for w in _COMMIT_WORDS)


def secret_named(key: str) -> bool:
    """Is ``key`` the name of a credential (``password``, ``HF_TOKEN``, ``api_key``)?"""
    if key.lower() in _NOT_SECRET_KEYS:
        return False
    words = _words(key)
    return any(w in words for w in _SECRET_WORDS) and "tokenizer" not in words \
        and not words.endswith(("tokens", "tokenid", "tokenids"))


def _last_key(path: tuple[Any, ...]) -> str | None:
    for part in reversed(path):
        if isinstance(part, str):
            return part
    return None


def find_secret(value: str, path: tuple[Any, ...] = (), previous: str | None = None
                ) -> str | None:
    """What credential ``value`` holds (``"a Hugging Face token"`` …), or None.

    ``path`` is where it lies (its last key gives the context); ``previous`` is the list
    item before it, so ``["--revision", "<40 hex>"]`` reads as a commit id.
    """
    for what, pattern in PATTERNS:
        if pattern.search(value):
            return what
    key = _last_key(path)
    if HEX40.search(value):
        commit = (key is not None and _commit_context(key)) or (
            previous is not None and _commit_context(previous.lstrip("-").split("=")[0]))
        inline = re.search(r"(?:revision|commit|sha)[=:@]\s*[0-9a-f]{40}", value.lower())
        if not commit and not inline:
            return "a Weights & Biases key (or another 40-hex credential)"
    if key is not None and secret_named(key) and _TOKEN_SHAPED.fullmatch(value) \
            and re.search(r"[0-9]", value) and not value.startswith(("$", "{")):
        return f"a credential (the value of {key!r})"
    return None


_NAMED_VALUE = re.compile(
    r"""(?P<name>[A-Za-z][\w.-]*)["']?\s*[=:]\s*["']?(?=(?P<value>[^\s"',;&)}\]]+))""")
"""``password=…``, ``"api_key": "…"``, ``HF_TOKEN: …``: a value given its name in text (the
value is looked ahead at, so ``error: password=…`` finds ``password`` after ``error``)."""


def _redact_named_values(text: str) -> str:
    out, done = [], 0
    for match in _NAMED_VALUE.finditer(text):
        start, end = match.span("value")
        # the last dotted part names the value: ``secretKeyRef.name`` is a Secret's name
        # (shown), ``env.HF_TOKEN`` a credential (redacted)
        if start < done or not secret_named(match.group("name").rsplit(".", 1)[-1]):
            continue
        value = match.group("value")
        if _TOKEN_SHAPED.fullmatch(value) and value != REDACTED:
            out += [text[done:start], REDACTED]
            done = end
    return "".join(out) + text[done:]


def redact(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``<redacted>``.

    Without context, 40 hex digits are redacted too unless a commit word
    (``revision``, ``commit``, ``sha`` …) stands right before them; a value after a
    credential's name (``password=…``, ``"api_key": "…"``) is redacted whatever its shape.
    """
    for _what, pattern in PATTERNS:
        text = pattern.sub(REDACTED, text)
    text = _redact_named_values(text)

    def hex40(match: re.Match[str]) -> str:
        before = text[max(0, match.start() - 24): match.start()].lower()
        if re.search(r"(revision|commit|sha|ref|hash|digest|@)[\"'=: ]*$", before):
            return match.group(0)
        return REDACTED

    return HEX40.sub(hex40, text)


def redact_data(data: Any) -> Any:
    """``redact`` over every string (keys too) of a JSON-like value."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {redact_data(k): redact_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_data(v) for v in data]
    return data
