"""Each backend declares what it implements (``CHECKED``: the Backend protocol and its
capabilities, ``reconciler.backend.CAPABILITIES``), mypy --strict checks the class against
each protocol named there (tests/test_types.py), and this test that the names are exactly
the capabilities the class has: a capability implemented but not declared (so never
checked) or declared but not implemented fails here."""

from __future__ import annotations

import importlib
import re
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from ftspec.reconciler.backend import CAPABILITIES
from ftspec.reconciler.backends import BACKENDS


def _methods(protocol: type) -> list[str]:
    return [n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")]


def mismatches(module: ModuleType | Any) -> list[str]:
    """What ``module``'s CHECKED declaration gets wrong about its backend class."""
    text = module.__annotations__.get("CHECKED")
    if text is None:
        return ["no CHECKED declaration"]
    named = re.findall(r"type\[(\w+)\]", str(text))
    if not named or named[0] != "Backend":
        return [f"CHECKED names {named}, not Backend first"]
    classes = set(module.CHECKED)
    if len(classes) != 1:
        return [f"CHECKED holds {len(classes)} classes"]
    cls = classes.pop()
    has = [p.__name__ for p in CAPABILITIES
           if all(callable(getattr(cls, m, None)) for m in _methods(p))]
    problems = [f"{cls.__name__} implements {n} but CHECKED does not name it"
                for n in has if n not in named[1:]]
    problems += [f"CHECKED names {n} but {cls.__name__} does not implement it"
                 for n in named[1:] if n not in has]
    return problems


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_each_backend_declares_exactly_what_it_implements(name: str) -> None:
    module = importlib.import_module(BACKENDS[name])
    assert mismatches(module) == []
    assert module.make_backend.__annotations__["return"] == module.CHECKED[0].__name__


class _Partial:
    name = "fake"

    def measured(self, desired: Any) -> dict[str, Any]:
        return {}

    def preflight(self, desired: Any) -> list[Any]:
        return []


def test_a_capability_left_undeclared_or_claimed_falsely_is_named() -> None:
    undeclared = SimpleNamespace(
        __annotations__={"CHECKED": "tuple[type[Backend], type[Measurer]]"},
        CHECKED=(_Partial, _Partial))
    assert mismatches(undeclared) == [
        "_Partial implements Preflighter but CHECKED does not name it"]
    claimed = SimpleNamespace(
        __annotations__={"CHECKED": "tuple[type[Backend], type[Measurer], type[Preflighter],"
                                    " type[KeepsHistory]]"},
        CHECKED=(_Partial,) * 4)
    assert mismatches(claimed) == ["CHECKED names KeepsHistory but _Partial does not implement it"]
    assert mismatches(SimpleNamespace(__annotations__={})) == ["no CHECKED declaration"]
