"""A cost budget for the CEL rules ftspec evaluates, as kube-apiserver has one.

The API server bounds each rule's runtime cost (``PerCallLimit``) and the cost of one
object's validation (``RuntimeCELCostBudget``); a live CRD's rules come from the cluster,
so ftspec bounds them too. cel-python (a tree-walking interpreter, ~50 µs a node here) has
no cost accounting, so the budget is counted in evaluated nodes (``Meter.step``, called for
every node the interpreter visits, macros' bodies included) and in time: a rule may take
``RULE_STEPS`` nodes or ``RULE_SECONDS``, one ``crd_rules.check`` (every rule of one object)
``CHECK_STEPS`` or ``CHECK_SECONDS``, whichever ends first. Over the budget, the rule is
reported as not evaluated (``OverBudget``), and the rest of the check is not evaluated either.
Our own code: cel-python offers no hook for this; ``metered_runner`` subclasses its
interpreter (the one method every node passes through).
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

RULE_STEPS = 100_000
RULE_SECONDS = 2.0
CHECK_STEPS = 500_000
CHECK_SECONDS = 10.0
MAX_RULE_CHARS = 5_000
"""A rule's text longer than this is not compiled (the API server's own limit on a rule's
size is of this order; a longer one is not a rule anyone writes by hand)."""
MAX_NESTING = 50
"""Brackets nested deeper than this are not compiled (the parser recurses per level)."""


class OverBudget(Exception):
    """The rule (or the check) spent its budget; the message says which."""


class Meter:
    """The budget of one ``check``; ``start_rule`` opens each rule's share of it."""

    def __init__(self) -> None:
        self.steps = 0
        self.ends = time.monotonic() + CHECK_SECONDS
        self.rule_steps = 0
        self.rule_ends = self.ends
        self.spent: str | None = None
        """Why the check's budget ran out (then no further rule is evaluated)."""

    def start_rule(self) -> None:
        if self.spent is not None:
            raise OverBudget(self.spent)
        self.rule_steps = 0
        self.rule_ends = min(self.ends, time.monotonic() + RULE_SECONDS)

    def step(self) -> None:
        self.steps += 1
        self.rule_steps += 1
        if self.rule_steps > RULE_STEPS:
            raise OverBudget(f"over the cost budget of one rule ({RULE_STEPS} steps)")
        if self.steps > CHECK_STEPS:
            self.spent = f"over the cost budget of one object's rules ({CHECK_STEPS} steps)"
            raise OverBudget(self.spent)
        if self.rule_steps % 256 == 0:
            now = time.monotonic()
            if now > self.ends:
                self.spent = f"over the time budget of one object's rules ({CHECK_SECONDS:g} s)"
                raise OverBudget(self.spent)
            if now > self.rule_ends:
                raise OverBudget(f"over the time budget of one rule ({RULE_SECONDS:g} s)")


def too_complex(text: str) -> str | None:
    """Why ``text`` is not compiled at all (too long, nested too deeply), or None."""
    if len(text) > MAX_RULE_CHARS:
        return f"the rule is longer than {MAX_RULE_CHARS} characters"
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    if deepest > MAX_NESTING:
        return f"the rule nests brackets deeper than {MAX_NESTING} levels"
    return None


def evaluate(program: Any, activation: dict[str, Any], meter: Meter) -> Any:
    """``program`` (a ``metered_runner()`` instance) evaluated within ``meter``."""
    meter.start_rule()
    return program.evaluate_metered(activation, meter)


@cache
def metered_runner() -> type:
    """cel-python's interpreting runner, each node visit counted by the evaluation's meter."""
    from celpy import InterpretedRunner
    from celpy.evaluation import Evaluator

    class MeteredEvaluator(Evaluator):
        meter: Meter

        def _visit_tree(self, tree: Any) -> Any:
            self.meter.step()
            return super()._visit_tree(tree)

        def sub_evaluator(self, ast: Any) -> Any:
            sub = MeteredEvaluator(ast, activation=self.activation)
            sub.meter = self.meter
            return sub

    class MeteredRunner(InterpretedRunner):
        def evaluate_metered(self, context: Any, meter: Meter) -> Any:
            evaluator = MeteredEvaluator(ast=self.ast, activation=self.new_activation())
            evaluator.meter = meter
            return evaluator.evaluate(context)

    return MeteredRunner
