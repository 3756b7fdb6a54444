"""``engine.apply`` drives every backend's apply alike: what the backend holds is taken,
the plan is checked fresh on what the backend reads now, inside it, and only a fresh plan
reaches the backend's ``act``; what was taken is let go either way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from ftspec.reconciler import engine
from ftspec.reconciler.backend import ABSENT, NullReporter, Reporter, StalePlanError, StaleWords
from ftspec.reconciler.model import ApplyResult, Plan


class _Driver:
    """A backend that says what is asked of it, in order; ``now``: what it reads."""

    name = "fake"
    stale_words = StaleWords("the thing at {address}")

    def __init__(self, now: dict[str, str]) -> None:
        self.now = now
        self.calls: list[str] = []

    @contextmanager
    def holding(self, plan: Plan, reporter: Reporter) -> Iterator[str]:
        self.calls.append("take")
        try:
            yield "; it was held meanwhile"
        finally:
            self.calls.append("let go")

    def read_digests(self, plan: Plan) -> dict[str, str]:
        self.calls.append("read")
        return self.now

    def act(self, plan: Plan, reporter: Reporter) -> ApplyResult:
        self.calls.append("act")
        return ApplyResult(applied=())


def _apply(driver: _Driver, plan: Plan) -> Any:
    return engine.apply(driver, plan, NullReporter())  # type: ignore[arg-type]


def test_a_fresh_plan_is_read_and_acted_on_while_held() -> None:
    driver = _Driver({"x.a": "1"})
    assert _apply(driver, Plan("fake", (), read_digests={"x.a": "1"})).ok
    assert driver.calls == ["take", "read", "act", "let go"]


def test_a_stale_plan_never_reaches_act_and_is_let_go() -> None:
    driver = _Driver({"x.a": ABSENT})
    with pytest.raises(StalePlanError) as caught:
        _apply(driver, Plan("fake", (), read_digests={"x.a": "1"}))
    assert str(caught.value) == ("Saved plan is stale: the thing at x.a was removed since "
                                 "the plan was made; it was held meanwhile")
    assert driver.calls == ["take", "read", "let go"]
