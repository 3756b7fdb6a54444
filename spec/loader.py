"""YAML loading with a source map from every key path to its line and column.

Rules (see STYLE.md): YAML 1.2 (``on``/``yes`` are strings), no timestamp conversion,
duplicate keys are errors, aliases are bounded, and the file size is bounded. Every
failure becomes a :class:`Diagnostic` with a position; nothing here raises to the user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity, Span, SpecError
from ftspec.spec.kept import Deferred

MAX_SPEC_BYTES = 1 << 20
"""Specs are small documents; anything over 1 MiB is refused before parsing."""

MAX_NODES = 100_000
"""Upper bound on values after alias expansion (defeats "billion laughs" documents)."""


@dataclass(frozen=True)
class SourceDoc(Deferred):
    """A parsed YAML document: plain data plus where each key and value came from.

    Read back from the compile cache, its source map is rebuilt on first use
    (``ftspec.spec.kept``): only diagnostics found later need it."""

    deferred_fields = ("key_spans", "value_spans")

    file: str
    data: Any
    key_spans: dict[KeyPath, Span] = field(default_factory=dict)
    value_spans: dict[KeyPath, Span] = field(default_factory=dict)
    text: str = ""

    def span_of(self, path: KeyPath, *, key: bool = False) -> Span:
        """The closest known position for ``path``.

        A scalar's value (or its key with ``key=True``); a mapping or list by its key,
        since a block value starts on the next line; a path that is not in the document
        (a default) by the key of its nearest ancestor that is.
        """
        probe = tuple(path)
        if (probe and not key and probe in self.value_spans
                and not isinstance(self.value_at(probe), (dict, list))):
            return self.value_spans[probe]
        while probe:
            if probe in self.key_spans:
                return self.key_spans[probe]
            probe = probe[:-1]
        return self.value_spans.get((), Span(self.file, 1, 1))

    def value_at(self, path: KeyPath) -> Any:
        """The data at ``path``, or None when it is absent."""
        node = self.data
        for part in path:
            if isinstance(node, dict) and part in node:  # noqa: SIM114 (separate for typing)
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            else:
                return None
        return node


def _error(file: str, summary: str, line: int = 1, col: int = 1, code: str = "load",
           hint: str | None = None) -> SpecError:
    return SpecError(
        [Diagnostic(Severity.ERROR, summary, span=Span(file, line, col), hint=hint, code=code)]
    )


def read_spec_text(path: Path) -> str:
    """Read a spec file with the size, file-type and encoding checks; raises
    :class:`SpecError`. At most ``MAX_SPEC_BYTES + 1`` bytes are read (``bounded``)."""
    from ftspec.spec.bounded import InputRefused, read_bounded

    file = str(path)
    try:
        raw = read_bounded(path, MAX_SPEC_BYTES, "spec file")
    except InputRefused as exc:
        if exc.code == "too-large":
            size = f"{exc.size:,} bytes" if exc.size else f"over {MAX_SPEC_BYTES:,} bytes"
            raise _error(file, f"file is {size}; specs are limited to {MAX_SPEC_BYTES:,} "
                         "bytes", code="load.too-large") from None
        raise _error(file, exc.message, code="load.io") from None
    return decode_spec_bytes(file, raw)


def decode_spec_bytes(file: str, raw: bytes) -> str:
    if len(raw) > MAX_SPEC_BYTES:
        raise _error(
            file,
            f"input is {len(raw):,} bytes; specs are limited to {MAX_SPEC_BYTES:,} bytes",
            code="load.too-large",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise _error(
            file,
            f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save it as UTF-8",
            line,
            col,
            code="load.encoding",
        ) from None


def load_spec_file(path: Path) -> SourceDoc:
    return parse_yaml(read_spec_text(path), str(path))


def parse_yaml(text: str, file: str) -> SourceDoc:
    """Parse one YAML document into a :class:`SourceDoc`; raises :class:`SpecError`."""
    from ftspec.spec.yaml_nodes import NodeBuilder, TooManyValues, expanded_size, new_yaml
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    if "\t" in text:
        _check_tabs(text, file)
    if "%" in text:
        _check_directives(text, file)
    fast = _parse_fast(text, file)
    if fast is not None:
        return fast
    yaml = new_yaml(MAX_NODES)
    try:
        docs = list(yaml.compose_all(text))
        if len(docs) > 1:
            raise _error(file, f"expected one YAML document, found {len(docs)} (separated by "
                         "'---')", _second_document_line(text), code="load.shape",
                         hint="put each spec in its own file")
        root = docs[0] if docs else None
        if root is None:
            raise _empty(file)
        if expanded_size(root, {}, MAX_NODES) > MAX_NODES:
            raise _error(
                file,
                f"document expands to more than {MAX_NODES:,} values through aliases; "
                "specs must stay small",
                code="load.alias-bomb",
            )
        builder = NodeBuilder(file, yaml)
        data = builder.convert(root, ())
    except TooManyValues as exc:
        raise _error(file, f"document holds more than {MAX_NODES:,} values; specs must stay "
                     "small", exc.mark.line + 1, exc.mark.column + 1,
                     code="load.too-many-values") from None
    except MarkedYAMLError as exc:
        raise _marked_error(file, exc) from None
    except YAMLError as exc:  # unmarked errors are rare; still no traceback
        raise _error(file, f"invalid YAML: {exc}", code="load.yaml") from None
    except RecursionError:
        raise _error(file, "YAML nesting is too deep", code="load.yaml") from None
    if data is None:
        raise _empty(file)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else _scalar_word(data)
        raise _error(
            file,
            f"expected a mapping at the top level (apiVersion, kind, …), found {kind}",
            code="load.shape",
            hint="a spec is a mapping that starts with `apiVersion: ftspec.dev/v1alpha1`",
        )
    builder.value_spans[()] = Span(file, 1, 1)
    return SourceDoc(file, data, builder.key_spans, builder.value_spans, text)


def _parse_fast(text: str, file: str) -> SourceDoc | None:
    """The document through libyaml (``yaml_fast``), or None when only the exact pure path
    may answer: whatever it cannot take without doubt, and every error, goes there."""
    from ftspec.spec.yaml_fast import fast_compose
    from ftspec.spec.yaml_nodes import NodeBuilder, expanded_size, new_yaml

    yaml = new_yaml(MAX_NODES)
    root = fast_compose(text, yaml, MAX_NODES)
    if root is None:
        return None
    builder = NodeBuilder(file, yaml)
    try:
        if expanded_size(root, {}, MAX_NODES) > MAX_NODES:
            return None
        data = builder.convert(root, ())
    except Exception:  # noqa: BLE001 (the pure path reports it, located)
        return None
    if not isinstance(data, dict):
        return None
    builder.value_spans[()] = Span(file, 1, 1)
    return SourceDoc(file, data, builder.key_spans, builder.value_spans, text)


def _empty(file: str) -> SpecError:
    return _error(file, "file is empty; expected a FineTune spec (a mapping)", code="load.empty",
                  hint="start from one of the specs in examples/")


_DIRECTIVE = re.compile(r"^%YAML[ \t]+(\S*)", re.MULTILINE)


def _check_directives(text: str, file: str) -> None:
    """Only YAML 1.2 semantics: a ``%YAML`` directive for another version is refused
    (1.1 would turn ``no`` into false; ruamel rejects 1.3 with an assertion)."""
    for match in _DIRECTIVE.finditer(text):
        if match.group(1) != "1.2":
            line = text.count("\n", 0, match.start()) + 1
            raise _error(file, "ftspec reads YAML 1.2 only; this %YAML directive asks for "
                         "another version", line, 1, code="load.yaml-version",
                         hint="remove the directive, or write %YAML 1.2")


def _check_tabs(text: str, file: str) -> None:
    """YAML forbids tabs in indentation; say so plainly instead of a scanner error."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip(" ")
        if stripped.startswith("\t"):
            col = len(line) - len(stripped) + 1
            raise _error(
                file,
                "tab character in indentation; YAML indents with spaces only",
                lineno,
                col,
                code="load.tab",
                hint="replace the tab with spaces",
            )


def _marked_error(file: str, exc: Any) -> SpecError:
    mark = exc.problem_mark or exc.context_mark
    if exc.context_mark is not None and "end of stream" in str(exc.problem):
        mark = exc.context_mark  # an unclosed quote or bracket: point at where it opened
    line = mark.line + 1 if mark is not None else 1
    col = mark.column + 1 if mark is not None else 1
    problem = (exc.problem or exc.context or "invalid YAML").strip()
    context = exc.context.strip() if exc.context and exc.problem else ""
    opened = exc.context_mark
    hint = None
    if context.startswith("while scanning a quoted scalar"):
        hint = "the quoted string that starts here is never closed; add the closing quote"
    elif context.startswith("while parsing a flow") and opened is not None:
        closer = "}" if "mapping" in context else "]"
        context += f" that starts at line {opened.line + 1}, column {opened.column + 1}"
        hint = f"is a closing '{closer}' missing?"
    summary = f"invalid YAML: {problem}" + (f" {context}" if context else "")
    return _error(file, summary, line, col, code="load.yaml", hint=hint)


def _second_document_line(text: str) -> int:
    """Line of the '---' that starts the second document (1 when it cannot be told)."""
    content_seen = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.startswith("---") and line[3:4] in ("", " ", "\t"):
            if content_seen:
                return lineno
            content_seen = True
        elif line.strip() and not line.lstrip().startswith("#") and not line.startswith("%"):
            content_seen = True
    return 1


def _scalar_word(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string"
