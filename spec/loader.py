"""YAML loading with a source map from every key path to its line and column.

Rules (see STYLE.md): YAML 1.2 (``on``/``yes`` are strings), no timestamp conversion,
duplicate keys are errors, aliases are bounded, and the file size is bounded. Every
failure becomes a :class:`Diagnostic` with a position; nothing here raises to the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity, Span, SpecError

MAX_SPEC_BYTES = 1 << 20
"""Specs are small documents; anything over 1 MiB is refused before parsing."""

MAX_NODES = 100_000
"""Upper bound on values after alias expansion (defeats "billion laughs" documents)."""


@dataclass(frozen=True)
class SourceDoc:
    """A parsed YAML document: plain data plus where each key and value came from."""

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
            if isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            else:
                return None
        return node


def _error(file: str, summary: str, line: int = 1, col: int = 1, code: str = "load",
           hint: str | None = None) -> SpecError:
    return SpecError(
        [Diagnostic(Severity.ERROR, summary, span=Span(file, line, col), hint=hint, code=code)]
    )


def _yaml() -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.resolver import VersionedResolver

    class _NoTimestampResolver(VersionedResolver):
        """YAML 1.2 core schema without the timestamp tag: dates stay strings."""

        def add_version_implicit_resolver(
            self, version: Any, tag: Any, regexp: Any, first: Any
        ) -> None:
            if tag != "tag:yaml.org,2002:timestamp":
                super().add_version_implicit_resolver(version, tag, regexp, first)

    yaml = YAML(typ="rt")
    yaml.Resolver = _NoTimestampResolver
    yaml.version = (1, 2)
    yaml.allow_duplicate_keys = False
    return yaml


def read_spec_text(path: Path) -> str:
    """Read a spec file with the size and encoding checks; raises :class:`SpecError`."""
    file = str(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise _error(file, f"cannot read file: {exc.strerror or exc}", code="load.io") from None
    if path.is_dir():
        raise _error(file, "is a directory, not a spec file", code="load.io")
    if size > MAX_SPEC_BYTES:
        raise _error(
            file,
            f"file is {size:,} bytes; specs are limited to {MAX_SPEC_BYTES:,} bytes",
            code="load.too-large",
        )
    raw = path.read_bytes()
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
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    if "\t" in text:
        _check_tabs(text, file)
    yaml = _yaml()
    try:
        docs = list(yaml.load_all(text))
    except MarkedYAMLError as exc:
        raise _marked_error(file, exc) from None
    except YAMLError as exc:  # unmarked errors are rare; still no traceback
        raise _error(file, f"invalid YAML: {exc}", code="load.yaml") from None
    except RecursionError:
        raise _error(file, "YAML nesting is too deep", code="load.yaml") from None
    if len(docs) > 1:
        raise _error(file, f"expected one YAML document, found {len(docs)} (separated by '---')",
                     _second_document_line(text), code="load.shape",
                     hint="put each spec in its own file")
    if not docs or docs[0] is None:
        raise _error(file, "file is empty; expected a FineTune spec (a mapping)", code="load.empty",
                     hint="start from one of the specs in examples/")
    root = docs[0]
    if not isinstance(root, dict):
        kind = "a list" if isinstance(root, list) else f"{_scalar_word(root)}"
        raise _error(
            file,
            f"expected a mapping at the top level (apiVersion, kind, …), found {kind}",
            code="load.shape",
            hint="a spec is a mapping that starts with `apiVersion: ftspec.dev/v1alpha1`",
        )
    if _expanded_size(root, {}) > MAX_NODES:
        raise _error(
            file,
            f"document expands to more than {MAX_NODES:,} values through aliases; "
            "specs must stay small",
            code="load.alias-bomb",
        )
    builder = _Builder(file)
    data = builder.convert(root, ())
    builder.value_spans[()] = Span(file, 1, 1)
    return SourceDoc(file, data, builder.key_spans, builder.value_spans, text)


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
    name = type(exc).__name__
    if name == "DuplicateKeyError":
        key = _duplicate_key(exc)
        first = exc.context_mark
        where = f" (first defined on line {first.line + 1})" if first is not None else ""
        summary = f'duplicate key "{key}"{where}' if key else f"duplicate key{where}"
        return _error(file, summary, line, col, code="load.duplicate-key",
                      hint="keep one of them; a later key would silently win elsewhere")
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


def _duplicate_key(exc: Any) -> str | None:
    import re

    match = re.search(r'found duplicate key "(.*?)"', str(exc.problem))
    return match.group(1) if match else None


def _expanded_size(node: Any, memo: dict[int, int]) -> int:
    """Number of values ``node`` expands to, aliases counted each time (memoized by id)."""
    if isinstance(node, dict):
        children: Any = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return 1
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = MAX_NODES + 1  # a cycle (recursive alias) counts as too large
    total = 1
    for child in children:
        total += _expanded_size(child, memo)
        if total > MAX_NODES:
            break
    memo[id(node)] = total
    return total


class _Builder:
    """Turns ruamel's round-trip nodes into plain data, recording spans as it goes."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.key_spans: dict[KeyPath, Span] = {}
        self.value_spans: dict[KeyPath, Span] = {}

    def _span(self, line: int, col: int) -> Span:
        return Span(self.file, line + 1, col + 1)

    def convert(self, node: Any, path: KeyPath) -> Any:
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        if isinstance(node, CommentedMap):
            out: dict[str, Any] = {}
            for raw_key, value in node.items():
                key = raw_key if isinstance(raw_key, str) else _key_text(raw_key)
                child = path + (key,)
                if len(path) < 64:
                    kl, kc = node.lc.key(raw_key)
                    vl, vc = node.lc.value(raw_key)
                    self.key_spans[child] = self._span(kl, kc)
                    self.value_spans[child] = self._span(vl, vc)
                out[key] = self.convert(value, child)
            return out
        if isinstance(node, CommentedSeq):
            items: list[Any] = []
            for index, value in enumerate(node):
                child = path + (index,)
                line, col = node.lc.item(index)
                self.key_spans[child] = self._span(line, col)
                self.value_spans[child] = self._span(line, col)
                items.append(self.convert(value, child))
            return items
        return _scalar(node)


def _key_text(key: Any) -> str:
    """Mapping keys are names: ``1``, ``true`` or ``null`` as keys become their YAML text."""
    value = _scalar(key)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _scalar(value: Any) -> Any:
    """Plain Python scalars (ruamel wraps them to keep formatting)."""
    from ruamel.yaml.scalarbool import ScalarBoolean

    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, ScalarBoolean):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return str(value)
