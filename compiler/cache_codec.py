"""Compile results as JSON data and back: the compile cache's entry format.

A kept result must never be able to run code when it is read back (a pickle can), so it
is written as JSON and rebuilt by a decoder that follows the *declared types* of the
dataclass fields (``typing.get_type_hints``): the data never names a class, it only fills
fields, and a field of a dataclass type is rebuilt as that class. Every class so reached
must be one of ftspec's own dataclasses or enums (``ftspec.*``); every value is checked
against its field's type (exact ``str``/``int``/``float``/``bool``, ``Literal`` members,
enum values, tuple lengths, the exact set of field names). Anything else raises
:class:`Unreadable`, which the cache treats as a miss.

Why JSON through the standard library's ``json``: it is data only, its C parser is the
fastest reader available without a new dependency (neither ``orjson`` nor ``msgspec`` is
one of ftspec's), and no library rebuilds frozen dataclasses holding ``Any`` data, key
paths as dict keys and a lazily validated pydantic model from it, so this module does.
The encoder is generic over fields, so a new field of ``Job`` needs no edit here.

Decoding lives in ``cache_decode``. Special cases, each because a value is not plain data:

* ``Any`` (a document's data, a manifest's object) may hold tuples and non-string keys that
  JSON cannot tell from lists and strings: a value that is plain JSON is written as
  ``[0, value]`` (read back without a walk); any other as ``[1, tagged]`` where each
  container says what it is (``{"l": [...]}``, ``{"t": [...]}``, ``{"m": [[k, v], ...]}``).
* Deferred fields (``ftspec.spec.kept``) are written as JSON text of their own and rebuilt
  on first use, since a warm ``plan`` reads none of them: ``Job.spec`` (the pydantic
  ``FineTuneSpec``: validating it imports pydantic) and a document's source map (hundreds
  of spans, needed only to place a diagnostic found later). Here they are only checked to
  be text (the spec: a JSON object); the rest of their checks come late. An entry's digest
  turns away any damage, so only this user, re-signing a hand-edited entry, could make them
  fail: a source map then reads as empty (positions fall back to the file's first line),
  a spec raises pydantic's error.
* ``Artifact.text`` may be a renderer not yet run (``partial(to_yaml, obj)``): written as the
  renderer's name and rebuilt over the decoded ``obj``; any other function is run and its
  text kept.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

Coder = Callable[[Any], Any]


class Unreadable(Exception):
    """The data is not a value of the declared type (the cache reads it as a miss)."""


class SpecJSON:
    """Stands for ``FineTuneSpec`` in the declared types: kept as JSON text, validated on
    first use."""


_NAMES = {"FineTuneSpec": SpecJSON}
"""Names that the modules declare only for type checkers (``if TYPE_CHECKING``)."""

_RENDERERS = ("to_yaml", "to_json")
"""Functions of ``ftspec.targets.render`` an artifact's text may be waiting on."""


def encode(value: Any, kind: Any) -> Any:
    """``value`` (of declared type ``kind``) as JSON data; raises :class:`Unreadable` for a
    value the format cannot hold."""
    return _encoder(kind)(value)


def decode(data: Any, kind: Any) -> Any:
    """The value of type ``kind`` that ``data`` holds; raises :class:`Unreadable`."""
    from ftspec.compiler.cache_decode import decoder

    try:
        return decoder(kind)(data)
    except Unreadable:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        raise Unreadable(str(exc)) from None


# ---- types ---------------------------------------------------------------------------


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """The init fields of one of ftspec's dataclasses, with their declared types."""
    if not (cls.__module__.startswith("ftspec.") and dataclasses.is_dataclass(cls)):
        raise Unreadable(f"{cls!r} is not one of ftspec's dataclasses")
    hints = typing.get_type_hints(cls, localns=_NAMES)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls) if f.init)


def _parts(kind: Any) -> tuple[Any, tuple[Any, ...]]:
    origin = typing.get_origin(kind)
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union, typing.get_args(kind)
    return origin, typing.get_args(kind)


def _is_mapping(origin: Any) -> bool:
    return origin in (dict, Mapping, typing.Mapping)


def _ftspec_enum(kind: Any) -> bool:
    return (isinstance(kind, type) and issubclass(kind, enum.Enum)
            and kind.__module__.startswith("ftspec."))


_SCALARS = {str: frozenset({str}), int: frozenset({int}), float: frozenset({int, float}),
            bool: frozenset({bool}), type(None): frozenset({type(None)})}
def _same_types(kind: Any) -> frozenset[type] | None:
    """The JSON types whose data *is* the value of ``kind`` (no change, no further check):
    what lets a key path or a ``dict[str, str]`` be taken as parsed after one type test."""
    if kind in _SCALARS:
        return _SCALARS[kind]
    origin, args = _parts(kind)
    if origin is typing.Union:
        found = [_same_types(a) for a in args]
        if all(f is not None for f in found):
            return frozenset().union(*(f for f in found if f is not None))
    return None


# ---- encoding ------------------------------------------------------------------------


@functools.cache
def _encoder(kind: Any) -> Coder:
    if kind is Any:
        return _encode_any
    if kind is SpecJSON:
        return _encode_spec
    if kind in (str, int, float, bool, type(None)):
        return _check(kind)
    if isinstance(kind, type) and issubclass(kind, PurePath):
        return lambda v: str(_check(PurePath)(v))
    if _ftspec_enum(kind):
        return lambda v: _check(kind)(v).value
    origin, args = _parts(kind)
    if origin is typing.Literal:
        return _member_of(args)
    if origin is typing.Union:
        return _union_encoder(args)
    if origin in (tuple, list):
        items = _sequence(origin, args, _encoder)
        return lambda v: [code(x) for code, x in items(_check(origin)(v))]
    if _is_mapping(origin):
        key, val = (_encoder(a) for a in args)
        if args[0] is str:
            return lambda v: {key(k): val(x) for k, x in _check(Mapping)(v).items()}
        return lambda v: [[key(k), val(x)] for k, x in _check(Mapping)(v).items()]
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return _dataclass_encoder(kind)
    raise Unreadable(f"the cache cannot hold a value of type {kind!r}")


def _check(kind: type) -> Coder:
    """Exactly ``kind`` (a ``float`` may be written as an ``int``; a mapping or a path may be
    any subclass)."""
    loose = kind in (Mapping, PurePath)

    def same(value: Any) -> Any:
        if type(value) is kind or (loose and isinstance(value, kind)) or (
                kind is float and type(value) is int):
            return value
        raise Unreadable(f"{type(value).__name__} where {kind.__name__} was declared")
    return same


def _member_of(allowed: tuple[Any, ...]) -> Coder:
    def member(value: Any) -> Any:
        if not any(type(value) is type(a) and value == a for a in allowed):
            raise Unreadable(f"{value!r} is not one of {allowed!r}")
        return value
    return member


def _sequence(origin: Any, args: tuple[Any, ...], coder: Callable[[Any], Coder]
              ) -> Callable[[Any], list[tuple[Coder, Any]]]:
    """Pairs each item of a sequence with the coder of its declared type."""
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        fixed = [coder(a) for a in args]

        def pairs(seq: Any) -> list[tuple[Coder, Any]]:
            if len(seq) != len(fixed):
                raise Unreadable(f"{len(seq)} items where {len(fixed)} were declared")
            return list(zip(fixed, seq))
        return pairs
    each = coder(args[0] if args else Any)
    return lambda seq: [(each, x) for x in seq]


def _union_encoder(arms: tuple[Any, ...]) -> Coder:
    def encode_arm(value: Any) -> Any:
        for arm in arms:
            if _fits(value, arm):
                return _encoder(arm)(value)
        raise Unreadable(f"{type(value).__name__} fits none of {arms!r}")
    return encode_arm


def _fits(value: Any, arm: Any) -> bool:
    """Whether ``value`` is of the (outer) type ``arm``: picks a union's arm to write."""
    if arm is Any:
        return True
    if arm is type(None):
        return value is None
    origin, args = _parts(arm)
    if origin is typing.Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if _is_mapping(origin):
        return isinstance(value, Mapping)
    if origin is not None:
        return type(value) is origin
    if arm is float:
        return type(value) in (int, float)
    if arm in (str, int, bool):
        return type(value) is arm
    return isinstance(arm, type) and isinstance(value, arm)


def _is_artifact(cls: type) -> bool:
    return cls.__name__ == "Artifact" and cls.__module__ == "ftspec.targets.base"


@functools.cache
def _flat(cls: type) -> bool:
    """Whether ``cls`` is written as the array of its values in field order rather than an
    object: a record of scalars only (a ``Span``; a document has hundreds, and as arrays
    they parse and build in half the time). Its field names are still what the decoder
    builds it by: the array must have exactly one value per field, each of its type."""
    return (not hasattr(cls, "__post_init__") and not _is_artifact(cls)
            and all(f.init for f in dataclasses.fields(cls))
            and all(_same_types(kind) is not None for _, kind in _fields(cls)))


def _deferred(cls: type) -> frozenset[str]:
    """Fields kept as text of their own and rebuilt on first use (``ftspec.spec.kept``):
    the spec, and what the class lists in ``deferred_fields``."""
    named = getattr(cls, "deferred_fields", ())
    return frozenset(name for name, kind in _fields(cls) if kind is SpecJSON or name in named)


def _dataclass_encoder(cls: type) -> Coder:
    deferred = _deferred(cls)
    fields = [(name, _encoder(kind), kind is SpecJSON) for name, kind in _fields(cls)
              if not (_is_artifact(cls) and name == "text")]
    artifact = _is_artifact(cls)
    if _flat(cls):
        def encode_flat(value: Any) -> list[Any]:
            if type(value) is not cls:
                raise Unreadable(f"{type(value).__name__} where {cls.__name__} was declared")
            return [code(getattr(value, name)) for name, code, _ in fields]
        return encode_flat

    def encode_fields(value: Any) -> dict[str, Any]:
        if type(value) is not cls:
            raise Unreadable(f"{type(value).__name__} where {cls.__name__} was declared")
        out: dict[str, Any] = {}
        kept = value.__dict__.get("_kept") or {}
        for name, code, spec in fields:
            if name not in deferred:
                out[name] = code(getattr(value, name))
            elif name not in value.__dict__ and name in kept:  # read back, never used since
                out[name] = _check(str)(kept[name][0])
            else:
                text = code(getattr(value, name))
                out[name] = text if spec else json.dumps(text, separators=(",", ":"))
        if artifact:
            out["text"] = _encode_text(getattr(value, "text"), getattr(value, "obj"))  # noqa: B009
        return out
    return encode_fields


def _encode_text(text: Any, obj: Any) -> Any:
    if isinstance(text, str):
        return text
    if (isinstance(text, functools.partial) and text.func.__name__ in _RENDERERS
            and text.func.__module__ == "ftspec.targets.render" and text.args == (obj,)
            and text.args[0] is obj and not text.keywords):
        return {"render": text.func.__name__}
    rendered = text()
    if not isinstance(rendered, str):
        raise Unreadable("an artifact's text is not text")
    return rendered


def _encode_spec(spec: Any) -> str:
    text = spec.model_dump_json(exclude_unset=True)
    assert isinstance(text, str)
    return text


def _plain(value: Any) -> bool:
    """JSON says it as it is: dicts with string keys, lists, strings, numbers, booleans."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if kind is list:
        return all(_plain(v) for v in value)
    return kind in (str, int, float, bool) or value is None


def _encode_any(value: Any) -> list[Any]:
    if _plain(value):
        return [0, value]
    return [1, _tagged(value)]


def _tagged(value: Any) -> Any:
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    if kind is list:
        return {"l": [_tagged(v) for v in value]}
    if kind is tuple:
        return {"t": [_tagged(v) for v in value]}
    if kind is dict:
        return {"m": [[_tagged(k), _tagged(v)] for k, v in value.items()]}
    raise Unreadable(f"the cache cannot hold a {kind.__name__}")
