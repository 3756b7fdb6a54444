"""The one place that turns values into POSIX shell text for generated scripts.

Every generated script (``command.sh``) and every shell command line a target emits is
built from these functions, so no spec value can become code:

- a literal value is single-quoted by ``shlex.quote`` (the standard library's quoting,
  safe for any string: newlines, ``$``, backquotes, quotes);
- a reference the *script* means to expand is a typed word, never a string that merely
  looks like one: ``EnvRef("NODE_RANK")`` renders ``"${NODE_RANK}"`` (its name must be a
  shell identifier) and ``ScriptFile("config.yaml")`` renders ``"$ftspec_dir"/config.yaml``,
  a path next to the script; ``SCRIPT_PREAMBLE`` sets ``ftspec_dir`` once at the top;
- container ``command``/``args`` items pass ``kube_literal`` (Kubernetes expands ``$(VAR)``
  in them; data must not name a variable);
- comment lines carry text only through ``comment``, which escapes line breaks and other
  non-printable characters, so a value can never end the comment and run as a command.

``shlex`` is the well-kept library part; the typed words exist because shlex has no notion
of "expand this on purpose".
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ftspec.spec.text import escape_text

SCRIPT_DIR_VAR = "ftspec_dir"
SCRIPT_PREAMBLE = f'{SCRIPT_DIR_VAR}=$(dirname -- "$0")'
"""First command of a generated script: the folder that holds it (and its files)."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class EnvRef:
    """An environment variable the shell expands when the script runs."""

    name: str

    def __post_init__(self) -> None:
        if not _IDENTIFIER.match(self.name):
            raise ValueError(f"not a shell variable name: {self.name!r}")

    def __str__(self) -> str:
        return "${" + self.name + "}"


@dataclass(frozen=True)
class ScriptFile:
    """A file that lies next to the generated script."""

    name: str

    def __str__(self) -> str:
        return self.name


Word = str | EnvRef | ScriptFile


def quote(word: Word) -> str:
    """Shell text for one argument: literals quoted, typed references expanded safely."""
    if isinstance(word, EnvRef):
        return f'"{word}"'
    if isinstance(word, ScriptFile):
        return f'"${SCRIPT_DIR_VAR}"/{shlex.quote(word.name)}'
    return shlex.quote(word)


def join(words: Iterable[Word]) -> str:
    """One command line with every word quoted."""
    return " ".join(quote(w) for w in words)


def plain(words: Iterable[Word]) -> tuple[str, ...]:
    """The words as plain strings, for targets that pass argv without a shell."""
    return tuple(str(w) for w in words)


def kube_literal(text: str) -> str:
    """A container ``command``/``args`` item that Kubernetes passes unchanged: kubelet
    expands ``$(VAR)`` there and reads ``$$`` as ``$``, so every ``$`` is doubled."""
    return text.replace("$", "$$")


def export(name: str, value: str) -> str:
    """``export NAME='value'``; NAME must be a shell identifier."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a shell variable name: {name!r}")
    return f"export {name}={shlex.quote(value)}"


def comment(text: str) -> str:
    """A ``#`` comment line whose text cannot end the comment."""
    return "# " + escape_text(text) if text else "#"


def script(comments: Iterable[str], commands: Iterable[str],
           env: Mapping[str, str] | None = None) -> str:
    """A ``#!/bin/sh`` script: ``comments`` (plain text, escaped here), the preamble, the
    exports of ``env``, then ``commands`` (command lines built with ``join``/``quote``)."""
    out = ["#!/bin/sh", *(comment(c) for c in comments), SCRIPT_PREAMBLE]
    out += [export(k, v) for k, v in sorted((env or {}).items())]
    out += list(commands)
    return "\n".join(out) + "\n"
