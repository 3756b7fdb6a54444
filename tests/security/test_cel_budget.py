"""CEL rules from a live CRD (or a CRD file) are evaluated within a cost budget (issue 34): a
rule that would take a million steps, nested rules over a hundred items, 200 nested
parentheses, or a rule that is not CEL are each reported as not evaluated, in bounded time,
never as an internal error. Ordinary rules still pass and fail as before."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("celpy")

from ftspec.compiler import cel_budget, crd_rules


def _crd(rules: list[str]) -> dict[str, Any]:
    return {"kind": "CustomResourceDefinition", "spec": {"group": "x.dev", "names": {
        "kind": "Thing"}, "versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": r} for r in rules],
                "properties": {"items": {"type": "array", "items": {"type": "integer"}},
                               "name": {"type": "string"}}}}}}}]}}


def _thing(items: int = 100) -> dict[str, Any]:
    return {"apiVersion": "x.dev/v1", "kind": "Thing", "metadata": {"name": "a"},
            "spec": {"items": list(range(items)), "name": "a"}}


@pytest.mark.slow
def test_a_million_step_rule_ends_within_the_rule_budget() -> None:
    nested = "self.items.all(x, self.items.all(y, self.items.all(z, x + y + z >= 0)))"
    started = time.monotonic()
    [v] = crd_rules.check(_thing(), _crd([nested]))
    assert time.monotonic() - started < cel_budget.RULE_SECONDS + 3
    assert v.message.startswith("rule not evaluated: over the ")
    assert "budget of one rule" in v.message


def test_the_budget_of_one_object_stops_the_rules_after_it(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setattr(cel_budget, "CHECK_STEPS", 3_000)
    heavy = "self.items.all(x, self.items.all(y, x >= 0))"  # ~10^4 steps each
    found = crd_rules.check(_thing(), _crd([heavy, heavy, "self.name == 'a'"]))
    assert [v.message for v in found] == [
        "rule not evaluated: over the cost budget of one object's rules (3000 steps)"] * 3


@pytest.mark.parametrize(("rule", "why"), [
    ("(" * 200 + "true" + ")" * 200, "nests brackets deeper than 50 levels"),
    ("self.name == " + " + ".join(["'a'"] * 2000), "longer than 5000 characters"),
    ("self.name ==", "not valid CEL"),
])
def test_rules_that_cannot_be_compiled_are_not_evaluated(rule: str, why: str) -> None:
    [v] = crd_rules.check(_thing(), _crd([rule]))
    assert v.message.startswith("rule not evaluated: ") and why in v.message


def test_ordinary_rules_pass_and_fail_as_before() -> None:
    ok = ["self.items.all(x, x >= 0)", "size(self.items) == 100", "self.name == 'a'"]
    assert crd_rules.check(_thing(), _crd(ok)) == []
    [v] = crd_rules.check(_thing(), _crd(["self.name == 'b'"]))
    assert v.message == "failed rule: self.name == 'b'"
