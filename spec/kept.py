"""Values read back from the compile cache whose costly fields are rebuilt on first use.

``ftspec.compiler.cache_codec`` leaves some fields of what it reads as their kept text
(a Job's spec: validating it imports pydantic; a document's source map: hundreds of spans)
because a warm ``plan`` reads neither. Such a class derives from :class:`Deferred`; the
field is absent from the instance until first read, then rebuilt from
``__dict__["_kept"][name] = (text, rebuild)`` and stored (one value for all threads).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

Rebuild = Callable[[str], Any]


class Deferred:
    """Mixin for a frozen dataclass the compile cache may build with fields left as text."""

    deferred_fields: ClassVar[tuple[str, ...]] = ()
    """Fields the cache keeps as text of their own, rebuilt on first use."""

    if not TYPE_CHECKING:  # for mypy, the class has its fields and nothing else

        def __getattr__(self, name: str) -> Any:
            """Only reached for a deferred field of a kept value, not read yet."""
            kept = self.__dict__.get("_kept")
            if not kept or name not in kept:
                raise AttributeError(name)
            text, rebuild = kept[name]
            return self.__dict__.setdefault(name, rebuild(text))
