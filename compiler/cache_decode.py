"""Rebuilding a kept value from its JSON data: the decoding half of ``cache_codec`` (whose
docstring describes the format). Each declared type gets one decoder, built once; a value
is checked against its type on the way (exact JSON types, ``Literal`` members, enum values,
the exact field names of a dataclass) and anything else raises ``Unreadable``."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import typing
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Any

from ftspec.compiler.cache_codec import (
    _RENDERERS,
    _SCALARS,
    Coder,
    SpecJSON,
    Unreadable,
    _check,
    _deferred,
    _fields,
    _flat,
    _ftspec_enum,
    _is_artifact,
    _is_mapping,
    _member_of,
    _parts,
    _same_types,
    _sequence,
)


@functools.cache
def decoder(kind: Any) -> Coder:
    if kind is Any:
        return _decode_any
    if kind is SpecJSON:
        return _spec_text
    if kind in (str, int, float, bool, type(None)):
        return _check(kind)
    if isinstance(kind, type) and issubclass(kind, PurePath):
        return lambda v: Path(_check(str)(v))
    if _ftspec_enum(kind):
        return lambda v: kind(v)
    origin, args = _parts(kind)
    if origin is typing.Literal:
        return _member_of(args)
    if origin is typing.Union:
        return _union_decoder(args)
    if origin in (tuple, list):
        return _sequence_decoder(origin, args)
    if _is_mapping(origin):
        return _mapping_decoder(args)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return _dataclass_decoder(kind)
    raise Unreadable(f"the cache cannot hold a value of type {kind!r}")


def _sequence_decoder(origin: Any, args: tuple[Any, ...]) -> Coder:
    same = _same_types(args[0]) if args and (origin is list or args[-1] is Ellipsis) else None
    if same is not None:  # a key path, a tuple of names: taken as parsed, types tested
        def decode_same(data: Any) -> Any:
            if type(data) is not list or not same.issuperset(map(type, data)):
                raise Unreadable(f"not a {origin.__name__} of {args[0]!r}")
            return data if origin is list else tuple(data)
        return decode_same
    items = _sequence(origin, args, decoder)
    return lambda v: origin(code(x) for code, x in items(_check(list)(v)))


def _mapping_decoder(args: tuple[Any, ...]) -> Coder:
    key, val = (decoder(a) for a in args)
    if args[0] is str:
        same = _same_types(args[1])
        if same is not None:  # dict[str, str]: taken as parsed, types tested
            def decode_same(data: Any) -> Any:
                if type(data) is not dict or not same.issuperset(map(type, data.values())):
                    raise Unreadable(f"not a mapping of {args[1]!r}")
                return data
            return decode_same
        return lambda v: {k: val(x) for k, x in _check(dict)(v).items()}

    def decode_pairs(data: Any) -> dict[Any, Any]:
        if type(data) is not list:
            raise Unreadable("a mapping's items are not a list")
        out = {}
        for pair in data:
            if type(pair) is not list or len(pair) != 2:
                raise Unreadable("a mapping's items are not pairs")
            out[key(pair[0])] = val(pair[1])
        return out
    return decode_pairs


def _spec_text(data: Any) -> str:
    """The spec's JSON text, checked to be a JSON object (what pydantic will validate on
    first use: a text that is not even that would fail there, not here)."""
    text: str = _check(str)(data)
    if not (text.startswith("{") and type(json.loads(text)) is dict):
        raise Unreadable("the spec is not a JSON object")
    return text


def _pairs(data: Any) -> list[tuple[Any, Any]]:
    pairs = _check(list)(data)
    if not all(type(p) is list and len(p) == 2 for p in pairs):
        raise Unreadable("a mapping's items are not pairs")
    return [(k, v) for k, v in pairs]


def _union_decoder(arms: tuple[Any, ...]) -> Coder:
    """Tries only the arms whose data can be of the JSON type found (no exception raised
    for a key path's ``int`` part on its way past ``str``)."""
    table = [(_json_types(arm), decoder(arm)) for arm in arms]

    def decode_arm(data: Any) -> Any:
        kind = type(data)
        for kinds, code in table:
            if kind in kinds:
                try:
                    return code(data)
                except (Unreadable, TypeError, ValueError, KeyError, IndexError):
                    continue
        raise Unreadable(f"{kind.__name__} fits none of {arms!r}")
    return decode_arm


_ANY_JSON: frozenset[type] = frozenset({str, int, float, bool, type(None), list, dict})


def _json_types(kind: Any) -> frozenset[type]:
    """The JSON types (as ``json.loads`` gives them) that data of ``kind`` can have."""
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind is SpecJSON or (isinstance(kind, type) and issubclass(kind, PurePath)):
        return _SCALARS[str]
    if _ftspec_enum(kind):
        return frozenset(type(m.value) for m in kind)
    origin, args = _parts(kind)
    if origin is typing.Literal:
        return frozenset(type(a) for a in args)
    if origin is typing.Union:
        return frozenset(t for a in args for t in _json_types(a))
    if origin in (tuple, list) or kind is Any:
        return frozenset({list})
    if _is_mapping(origin):
        return frozenset({dict}) if args[0] is str else frozenset({list})
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return frozenset({list}) if _flat(kind) else frozenset({dict})
    return _ANY_JSON


def _dataclass_decoder(cls: type) -> Coder:
    artifact = _is_artifact(cls)
    deferred = _deferred(cls)
    fields = [(name, decoder(kind)) for name, kind in _fields(cls)
              if not (artifact and name == "text") and name not in deferred]
    later = [(name, _later(cls, name, kind)) for name, kind in _fields(cls) if name in deferred]
    names = {name for name, _ in _fields(cls)}
    plain_init = not hasattr(cls, "__post_init__") and not hasattr(cls, "__slots__") and all(
        f.init for f in dataclasses.fields(cls))
    if _flat(cls):
        return _flat_decoder(cls, [(name, _same_types(kind)) for name, kind in _fields(cls)])

    def build(data: Any) -> Any:
        if type(data) is not dict or data.keys() != names:
            raise Unreadable(f"not the fields of {cls.__name__}")
        values = {name: code(data[name]) for name, code in fields}
        if artifact:
            values["text"] = _decode_text(data["text"], values["obj"])
        if not later:
            if not plain_init:
                return cls(**values)
            made: Any = object.__new__(cls)
            made.__dict__.update(values)  # what the generated __init__ would set, checked
            return made
        made = object.__new__(cls)  # deferred fields rebuilt on first use (spec.kept)
        made.__dict__.update(values)
        made.__dict__["_kept"] = {name: (check(data[name]), rebuild) for name, (check, rebuild)
                                  in later}
        return made
    return build


def _later(cls: type, name: str, kind: Any) -> tuple[Coder, Callable[[str], Any]]:
    """How a deferred field's text is checked now and rebuilt on first use."""
    if kind is SpecJSON:
        return _spec_text, _validate_spec
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    if field.default_factory is not dataclasses.MISSING:
        fallback: Callable[[], Any] = field.default_factory
    elif field.default is not dataclasses.MISSING:
        fallback = functools.partial(lambda value: value, field.default)
    else:
        raise Unreadable(f"{cls.__name__}.{name} is deferred but has no default")

    def rebuild(text: str) -> Any:
        try:
            return decoder(kind)(json.loads(text))
        except (Unreadable, TypeError, ValueError, KeyError, IndexError, RecursionError):
            return fallback()  # only an entry forged by this user gets here (module doc)
    return _check(str), rebuild


def _validate_spec(text: str) -> Any:
    from ftspec.spec.model import FineTuneSpec

    return FineTuneSpec.model_validate_json(text)


def _flat_decoder(cls: type, same: list[tuple[str, Any]]) -> Coder:
    """A record of scalars (a ``Span``) from its values in field order (see ``_flat``):
    the types of the values must be one of the combinations the fields allow."""
    names = [name for name, _ in same]
    signatures = frozenset(itertools.product(*(kinds for _, kinds in same)))
    new = object.__new__

    def build_flat(data: Any) -> Any:
        if type(data) is not list or tuple(map(type, data)) not in signatures:
            raise Unreadable(f"not the fields of {cls.__name__}")
        made: Any = new(cls)
        made.__dict__.update(zip(names, data))
        return made
    return build_flat


def _decode_text(data: Any, obj: Any) -> str | Callable[[], str]:
    if type(data) is str:
        return data
    if (type(data) is dict and data.keys() == {"render"} and data["render"] in _RENDERERS
            and obj is not None):
        from ftspec.targets import render

        renderer: Callable[[Any], str] = getattr(render, data["render"])
        return functools.partial(renderer, obj)
    raise Unreadable("an artifact's text is neither text nor a known renderer")


def _decode_any(data: Any) -> Any:
    if type(data) is not list or len(data) != 2 or data[0] not in (0, 1) \
            or type(data[0]) is not int:
        raise Unreadable("not a kept value")
    return data[1] if data[0] == 0 else _untagged(data[1])


def _untagged(data: Any) -> Any:
    kind = type(data)
    if kind in (str, int, float, bool) or data is None:
        return data
    if kind is not dict or len(data) != 1:
        raise Unreadable("a container without its kind")
    ((tag, items),) = data.items()
    if type(items) is not list:
        raise Unreadable("a container without items")
    if tag == "l":
        return [_untagged(v) for v in items]
    if tag == "t":
        return tuple(_untagged(v) for v in items)
    if tag == "m":
        out = {}
        for key, value in _pairs(items):
            key = _untagged(key)
            if isinstance(key, (list, dict)):
                raise Unreadable("a mapping key that is not hashable")
            out[key] = _untagged(value)
        return out
    raise Unreadable(f"an unknown container kind {tag!r}")
