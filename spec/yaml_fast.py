"""The fast way to compose a spec: libyaml's C parser, ruamel's YAML 1.2 resolver.

Composing with ruamel's pure-Python scanner and parser costs tens of milliseconds per spec,
most of a multi-spec ``plan``. PyYAML's ``CParser`` (libyaml) composes the same node graph
about twenty times faster, and it asks its ``resolve`` method for every implicit tag, so
ruamel's own resolver (YAML 1.2 core, no timestamps: ``yaml_nodes.new_yaml``) decides
what ``on``, ``0o17`` or ``2024-01-01`` are. The nodes are rebuilt as ruamel nodes (aliases
stay shared), so ``NodeBuilder``, the alias-expansion bound and every scalar check run
unchanged on them. Our code is only this glue: neither library offers the pairing.

The fast path answers only for documents it can take without doubt, and otherwise returns
None so that the caller runs the exact pure-Python path, which alone produces errors. It
declines:

- when PyYAML or its libyaml binding is missing, or off the main thread (the C composer
  recurses on the C stack, and worker threads may have small stacks);
- text over ``FAST_MAX_CHARS`` (so the C composer never builds a large graph: the values
  limit of the pure path is checked while composing; here the input is too small to come
  near it, and the count is checked again before use);
- text whose nesting could be deep (block collections nest only at a greater column, flow
  ones need a bracket, so max line length plus brackets bounds the depth the C composer
  recurses to);
- characters where libyaml and ruamel's reader could disagree (tabs, carriage returns,
  NEL/LS/PS line breaks, a byte-order mark, other control characters);
- nodes with a tag or an anchor (``&a !!str x``): the two disagree on where they start;
- empty plain values (``key:`` with nothing after it): libyaml places them at the ``:``,
  ruamel at the next token, and diagnostics about a missing section point there;
- anything libyaml rejects (several documents, duplicate anchors, bad syntax) and anything
  ``NodeBuilder`` rejects (duplicate keys, tags that do not fit, huge numbers).

``tests/spec/test_yaml_fast.py`` checks, on every example, golden input, invalid case and
fuzzing mutant, that a fast answer equals the pure path's data and source map.
"""

from __future__ import annotations

import re
import threading
from typing import Any

FAST_MAX_CHARS = 64 * 1024
"""Documents larger than this always take the pure path (specs are a few KiB)."""

FAST_MAX_DEPTH = 1000
"""Bound on the nesting the C composer may recurse to (a few hundred bytes of stack each)."""

_RESOLVED: dict[tuple[Any, Any, Any], str] = {}
"""Implicit tags already resolved: the resolver is a pure function of kind, text and
implicitness (YAML 1.2, no path resolvers), and specs of one plan repeat most scalars."""
_RESOLVED_MAX = 8192

_UNSURE = re.compile("[\t\r\x85\u2028\u2029\ufeff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f]")


def depth_bound(text: str) -> int:
    """An upper bound on the nesting depth of ``text``'s collections."""
    longest = max((len(line) for line in text.split("\n")), default=0)
    return longest + 1 + 2 * text.count("[") + text.count("{")


def fast_compose(text: str, yaml: Any, max_values: int) -> Any:
    """The document's root as ruamel nodes, or None when the pure path must decide."""
    if (len(text) > FAST_MAX_CHARS or _UNSURE.search(text) is not None
            or threading.current_thread() is not threading.main_thread()
            or depth_bound(text) > FAST_MAX_DEPTH):
        return None
    try:
        from yaml.cyaml import CParser
    except ImportError:
        return None
    from ruamel.yaml import nodes

    resolver = yaml.resolver
    kinds = _kinds()

    class _Parser(CParser):  # type: ignore[misc,unused-ignore]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            key = (kind, value, implicit)
            tag = _RESOLVED.get(key)
            if tag is None:
                if len(_RESOLVED) >= _RESOLVED_MAX:
                    _RESOLVED.clear()
                tag = _RESOLVED[key] = str(resolver.resolve(kinds[kind], value, implicit))
            return tag

        def descend_resolver(self, parent: Any, index: Any) -> None:
            pass  # no path resolvers: tags depend on the scalar alone

        def ascend_resolver(self) -> None:
            pass

    try:
        parser = _Parser(text)
        root = parser.get_single_node()
    except Exception:  # noqa: BLE001 (any refusal: the pure path gives the located error)
        return None
    if root is None:
        return None
    counter = _Counter(nodes, max_values, text)
    try:
        return counter.convert(root)
    except Exception:  # noqa: BLE001 (_TooMany, _Unsure, RecursionError: the pure path decides)
        return None


def _kinds() -> dict[Any, Any]:
    from ruamel.yaml import nodes as ruamel
    from yaml import nodes as pyyaml

    return {pyyaml.ScalarNode: ruamel.ScalarNode, pyyaml.SequenceNode: ruamel.SequenceNode,
            pyyaml.MappingNode: ruamel.MappingNode}


class _TooMany(Exception):
    pass


class _Unsure(Exception):
    """A node whose position libyaml reports differently from ruamel."""


class _Counter:
    """PyYAML nodes -> ruamel nodes, shared nodes kept shared, every reference counted as
    the pure path's composer counts it (an alias is one more value)."""

    def __init__(self, nodes: Any, limit: int, text: str) -> None:
        self.lines = text.split("\n")
        self.nodes = nodes
        self.limit = limit
        self.count = 0
        self.done: dict[int, Any] = {}
        self.tags: dict[str, Any] = {}

    def tag(self, text: str) -> Any:
        """One ruamel ``Tag`` per tag text (it caches its decoded form)."""
        tag = self.tags.get(text)
        if tag is None:
            from ruamel.yaml.tag import Tag

            tag = self.tags[text] = Tag(suffix=text)
        return tag

    def convert(self, node: Any) -> Any:
        self.count += 1
        if self.count > self.limit:
            raise _TooMany
        known = self.done.get(id(node))
        if known is not None:
            return known
        n = self.nodes
        kind = node.id
        mark = node.start_mark
        if self.lines[mark.line][mark.column:mark.column + 1] in ("&", "!"):
            raise _Unsure  # a tag or anchor: libyaml starts the node there, ruamel may not
        if kind == "scalar":
            style = node.style or None  # libyaml's plain style is '', ruamel's None
            if style is None and node.value == "":
                raise _Unsure  # libyaml places an empty value after its ':', ruamel before
                # the next token: only the pure path gives the position diagnostics use
            out = n.ScalarNode(self.tag(node.tag), node.value, node.start_mark, node.end_mark,
                               style=style)
            self.done[id(node)] = out
            return out
        if kind == "sequence":
            out = n.SequenceNode(self.tag(node.tag), [], node.start_mark, node.end_mark,
                                 flow_style=node.flow_style)
            self.done[id(node)] = out
            out.value = [self.convert(item) for item in node.value]
            return out
        out = n.MappingNode(self.tag(node.tag), [], node.start_mark, node.end_mark,
                            flow_style=node.flow_style)
        self.done[id(node)] = out
        out.value = [(self.convert(k), self.convert(v)) for k, v in node.value]
        return out
