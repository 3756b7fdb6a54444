"""A backend whose plan is given: what the engine's tests plan through ``engine.plan``."""

from __future__ import annotations

from typing import Any

from ftspec.reconciler.model import Change, Plan


class GivenPlan:
    """Plans ``changes`` whatever it is asked (as the local backend)."""

    name = "local"

    def __init__(self, *changes: Change) -> None:
        self.changes = changes

    def plan(self, desired: Any) -> Plan:
        return Plan("local", self.changes)
