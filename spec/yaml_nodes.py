"""YAML text -> plain data plus a source map, built from composed nodes.

Composing (scanner + parser + composer, no comment tracking) is what ``check-jsonschema``
pays too; building plain data from the nodes ourselves gives positions for every key
and value without ruamel's slower round-trip mode. Scalars are resolved with the YAML 1.2
core schema minus timestamps, so ``on``/``yes`` and dates stay strings.
"""

from __future__ import annotations

from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity, Span, SpecError

MERGE_TAG = "tag:yaml.org,2002:merge"


class TooManyValues(Exception):
    """Raised while composing, as soon as a document holds more than its limit of values."""

    def __init__(self, mark: Any) -> None:
        super().__init__("too many values")
        self.mark = mark


INT_LIMIT = 2**63 - 1
"""Integers beyond a signed 64-bit range are refused (no field needs them; JSON, YAML
readers in other languages and Kubernetes would not keep them)."""


def new_yaml(max_values: int | None = None) -> Any:
    """A pure-Python safe loader with the YAML 1.2 resolver minus timestamps; with
    ``max_values``, composing stops (``TooManyValues``) past that many nodes."""
    from ruamel.yaml import YAML
    from ruamel.yaml.composer import Composer
    from ruamel.yaml.resolver import VersionedResolver

    class _CountingComposer(Composer):  # type: ignore[misc,unused-ignore]
        count = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.count += 1
            if max_values is not None and self.count > max_values:
                raise TooManyValues(self.parser.peek_event().start_mark)
            return super().compose_node(parent, index)

    class _NoTimestampResolver(VersionedResolver):
        def add_version_implicit_resolver(
            self, version: Any, tag: Any, regexp: Any, first: Any
        ) -> None:
            if tag != "tag:yaml.org,2002:timestamp":
                super().add_version_implicit_resolver(version, tag, regexp, first)

    yaml = YAML(typ="safe", pure=True)
    yaml.Resolver = _NoTimestampResolver
    yaml.Composer = _CountingComposer
    yaml.version = (1, 2)
    return yaml


def expanded_size(node: Any, memo: dict[int, int], limit: int) -> int:
    """Values ``node`` expands to, aliases counted each time (memoized; cycles are huge)."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(node, MappingNode):
        children: list[Any] = [n for pair in node.value for n in pair]
    elif isinstance(node, SequenceNode):
        children = list(node.value)
    else:
        return 1
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = limit + 1
    total = 1
    for child in children:
        total += expanded_size(child, memo, limit)
        if total > limit:
            break
    memo[id(node)] = total
    return total


class NodeBuilder:
    """Plain dicts, lists and scalars from composed nodes, recording spans as it goes."""

    def __init__(self, file: str, yaml: Any) -> None:
        self.file = file
        self.constructor = yaml.constructor
        self.key_spans: dict[KeyPath, Span] = {}
        self.value_spans: dict[KeyPath, Span] = {}

    def span(self, node: Any) -> Span:
        mark = node.start_mark
        return Span(self.file, mark.line + 1, mark.column + 1)

    def convert(self, node: Any, path: KeyPath) -> Any:
        from ruamel.yaml.nodes import MappingNode, SequenceNode

        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            items: list[Any] = []
            for index, item in enumerate(node.value):
                child = path + (index,)
                self.key_spans[child] = self.value_spans[child] = self.span(item)
                items.append(self.convert(item, child))
            return items
        return self.scalar(node)

    def scalar(self, node: Any) -> Any:
        """A scalar's value; content that does not fit its tag (``!!int 12x``), lone
        surrogates, integers past 64 bits and non-finite numbers are located errors."""
        import math

        try:
            value = self.constructor.construct_object(node, deep=True)
        except (ValueError, KeyError, TypeError, OverflowError, IndexError):
            tag = str(node.tag).rsplit(":", 1)[-1]
            raise self._error(node, f"the value does not fit its tag !!{tag} (value hidden)",
                              "load.tag", hint="remove the tag, or write a value of that "
                              "type") from None
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            if abs(value) > INT_LIMIT:
                raise self._error(node, "integer is too large (more than 64 bits)",
                                  "load.number")
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self._error(node, "numbers must be finite (no .inf, .nan or values "
                                  "beyond the float range)", "load.number")
            return value
        text = value if isinstance(value, str) else str(value)
        if any("\ud800" <= ch <= "\udfff" for ch in text):
            raise self._error(node, "the string holds a lone surrogate escape (\\ud800-"
                              "\\udfff), which is not a character", "load.encoding",
                              hint="remove the escape, or write the character itself")
        return text

    def _pairs(self, node: Any) -> list[tuple[Any, Any]]:
        """The mapping's own pairs, then pairs merged in with ``<<`` (own keys win)."""
        from ruamel.yaml.nodes import MappingNode, SequenceNode

        own: list[tuple[Any, Any]] = []
        merged: list[tuple[Any, Any]] = []
        for key_node, value_node in node.value:
            if str(key_node.tag) == MERGE_TAG:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [
                    value_node]
                for source in sources:
                    if not isinstance(source, MappingNode):
                        raise self._error(source, "a merge key (<<) needs a mapping or a list "
                                          "of mappings", "load.yaml")
                    merged += self._pairs(source)
            else:
                own.append((key_node, value_node))
        return own + merged

    def _mapping(self, node: Any, path: KeyPath) -> dict[str, Any]:
        from ruamel.yaml.nodes import ScalarNode

        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        explicit = len([1 for k, _ in node.value if str(k.tag) != MERGE_TAG])
        for position, (key_node, value_node) in enumerate(self._pairs(node)):
            if not isinstance(key_node, ScalarNode):
                raise self._error(key_node, "a mapping key must be a plain value, not a "
                                  "mapping or list", "load.yaml")
            key = _key_text(self.scalar(key_node))
            if key in out:
                if position >= explicit:
                    continue  # merged keys never override
                raise self._error(
                    key_node, f'duplicate key "{key}" (first defined on line {first_line[key]})',
                    "load.duplicate-key",
                    hint="keep one of them; a later key would silently win elsewhere",
                )
            first_line[key] = key_node.start_mark.line + 1
            child = path + (key,)
            self.key_spans[child] = self.span(key_node)
            self.value_spans[child] = self.span(value_node)
            out[key] = self.convert(value_node, child)
        return out

    def _error(self, node: Any, summary: str, code: str, hint: str | None = None) -> SpecError:
        return SpecError([Diagnostic(Severity.ERROR, summary, span=self.span(node), hint=hint,
                                     code=code)])


def _key_text(value: Any) -> str:
    """Mapping keys are names: ``1``, ``true`` or ``null`` as keys become their YAML text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
