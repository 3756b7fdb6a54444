"""Names that differ from a catalog name only by an ``-instruct`` / ``-base`` ending.

A model's instruct release has its base model's shape (the numbers the catalog keeps), so
``granite-34b-code-instruct`` is priced and wrapped as the catalog's ``granite-34b-code-base``.
The name is still not the catalog's: ``model.family`` accepts it and resolves it with a
warning (``spec/validate.py``), and the importers match a hub id the same way
(``compiler/importers/base.py``, ``match_family``).
"""

from __future__ import annotations

from collections.abc import Mapping

VARIANT_ENDINGS = ("-instruct", "-base")


def stem(name: str) -> str:
    """``granite-34b-code-base`` -> ``granite-34b-code`` (either ending, in any case; a name
    without one is its own stem)."""
    for ending in VARIANT_ENDINGS:
        if name.lower().endswith(ending):
            return name[: -len(ending)]
    return name


def _endings(name: str) -> tuple[str, ...]:
    """The endings as a name of this spelling writes them: a Hugging Face repo id
    capitalises them (``Qwen/Qwen3-8B-Base``), a catalog key does not."""
    return VARIANT_ENDINGS if name == name.lower() else tuple(e.title() for e in VARIANT_ENDINGS)


def variant_names(known: Mapping[str, str]) -> dict[str, str]:
    """Each variant of a known name (a catalog key or alias -> its key) that is not itself
    known: the stem, and the stem with each ending, -> the key the known name resolves to.
    A repo id (``org/name``) has variants only where it ends in one of the endings (a
    catalog key always has). A variant two keys share stays out (it could be either)."""
    found: dict[str, set[str]] = {}
    for name, key in known.items():
        base = stem(name)
        if "/" in name and base == name:
            continue
        for variant in (base, *(base + e for e in _endings(name))):
            if variant not in known:
                found.setdefault(variant, set()).add(key)
    return {v: next(iter(keys)) for v, keys in sorted(found.items()) if len(keys) == 1}
