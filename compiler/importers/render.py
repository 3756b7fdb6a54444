"""A :class:`SpecDraft` as spec YAML: canonical key order, each value's origin as a comment,
and the text proven to read back as the data it was meant to hold.

ruamel.yaml's round-trip types carry the end-of-line comments; short lists of scalars are
written in flow style so a comment sits on the value's own line. Comment text (origins and
the header name files and command-line arguments the user gave) goes through one escape,
:func:`ftspec.spec.text.escape_text`: a line break, a control character or U+2028 in a file
name or ``KEY=VALUE`` argument is written as ``\\n``, ``\\x85``, ``\\u2028``, never as the
character that would end the comment. The rendered text is then parsed back with the spec
loader and compared with the draft's data; any difference refuses the import (an internal
error, nothing written) instead of writing a spec that means something else.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity, Span, SpecError, format_path
from ftspec.spec.loader import SourceDoc
from ftspec.spec.text import escape_text
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

ORDER = ("apiVersion", "kind", "metadata", "model", "data", "method", "training",
         "distributed", "resources", "output", "launcher", "entrypoint", "deploy", "secrets",
         "overrides")
READ_BACK_FILE = "<imported spec>"
ABSENT = object()
"""A key on one side of :func:`first_difference` only."""


def render(draft: SpecDraft, header: Sequence[str] = ()) -> str:
    """The spec text; ``header``: comment lines above it (each escaped, one line each)."""
    text: str = rendered(draft, header).text
    return text


def rendered(draft: SpecDraft, header: Sequence[str] = ()) -> SourceDoc:
    """The spec text parsed back (its :class:`SourceDoc`), after proving it holds exactly
    ``draft.data``; raises :class:`SpecError` (``import.internal``) when it does not."""
    top = {k: draft.data[k] for k in ORDER if k in draft.data}
    top.update({k: v for k, v in draft.data.items() if k not in top})
    doc = _node(top, (), draft.origins)
    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.representer.add_representer(
        type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    buf = io.StringIO()
    try:
        yaml.dump(doc, buf)
    except YAMLError as exc:
        raise _internal(f"a value has no YAML form ({escape_text(str(exc))[:80]})", None) from None
    lines = "".join(_comment(line) + "\n" for line in header)
    return read_back(lines + buf.getvalue(), top)


def read_back(text: str, meant: dict[str, Any]) -> SourceDoc:
    """``text`` parsed by the spec loader, refused unless it holds ``meant``."""
    from ftspec.spec.loader import parse_yaml

    try:
        doc = parse_yaml(text, READ_BACK_FILE)
    except SpecError as exc:
        first = exc.diagnostics[0]
        raise _internal(f"it is not a spec document ({first.summary})", first.span) from None
    found = first_difference(meant, doc.data, ())
    if found is not None:
        path, wrote, read = found
        raise _internal(f"at {format_path(path) or 'the top level'} it holds {_show(read)} "
                        f"where the import meant {_show(wrote)}", doc.span_of(path))
    return doc


def first_difference(meant: Any, read: Any, path: KeyPath) -> tuple[KeyPath, Any, Any] | None:
    """The first key path where ``read`` is not ``meant`` (types included: 1 is not 1.0
    nor True; a tuple is a list), with both values; None when they are the same."""
    if isinstance(meant, dict):
        if not isinstance(read, dict):
            return path, meant, read
        for key in list(meant) + [k for k in read if k not in meant]:
            if key not in meant or key not in read:
                return path + (key,), meant.get(key, ABSENT), read.get(key, ABSENT)
            found = first_difference(meant[key], read[key], path + (key,))
            if found is not None:
                return found
        return None
    if isinstance(meant, (list, tuple)):
        if not isinstance(read, list) or len(read) != len(meant):
            return path, meant, read
        for i, (m, r) in enumerate(zip(meant, read, strict=True)):
            found = first_difference(m, r, path + (i,))
            if found is not None:
                return found
        return None
    if type(meant) is not type(read):
        return path, meant, read
    return None if meant == read else (path, meant, read)


def _internal(why: str, span: Span | None) -> SpecError:
    return SpecError([Diagnostic(
        Severity.ERROR, f"internal error: the imported spec does not read back as written: "
        f"{why}; nothing was written", span=span, code="import.internal",
        hint="please report it with the source file; a value or a file name the spec writer "
        "could not keep is the likely cause")])


def _show(value: Any) -> str:
    if value is ABSENT:
        return "no such key"
    text = escape_text(repr(value))
    return text if len(text) <= 80 else text[:77] + "..."


def _comment(text: str) -> str:
    """One comment line: ``# `` and the text with every line break and control character
    made visible (the same escape as generated scripts' comments)."""
    return f"# {escape_text(text)}" if text else "#"


def _node(value: Any, path: KeyPath, origins: dict[KeyPath, str]) -> Any:
    if isinstance(value, dict):
        out = CommentedMap()
        for key, child in value.items():
            out[key] = _node(child, path + (key,), origins)
            origin = origins.get(path + (key,))
            if origin:
                out.yaml_add_eol_comment(_comment(origin), key, column=0)
        return out
    if isinstance(value, (list, tuple)):
        seq = CommentedSeq(_node(v, path + (i,), origins) for i, v in enumerate(value))
        if all(not isinstance(v, (dict, list, tuple)) for v in value):
            seq.fa.set_flow_style()
        return seq
    return value
