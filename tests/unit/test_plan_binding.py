"""A saved plan is applied only when it is exactly the plan its specs give now
(``reconciler.bound``): each difference refused with one line saying what differs."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from ftspec.reconciler.backend import StalePlanError
from ftspec.reconciler.bound import compare, first_difference
from ftspec.reconciler.model import Action, Change, Plan

AFTER: dict[str, Any] = {"argv": ["tune", "run", "x"], "env": {"PYTHONUNBUFFERED": "1"},
                         "address": "http://127.0.0.1:8265", "entrypoint": "tune run x"}
FRESH = Plan("local", (Change("local.run.a", Action.CREATE, None, AFTER, reason="new"),
                       Change("local.run.b", Action.NOOP, {"pid": 3}, {"argv": ["b"]})),
             {"local.run.a": "absent", "local.run.b": "d1"}, {"a.yaml": "w"})


def _with(index: int, **changes: Any) -> Plan:
    edited = list(FRESH.changes)
    edited[index] = replace(edited[index], **changes)
    return replace(FRESH, changes=tuple(edited))


def test_the_same_plan_binds_whatever_its_descriptions_say() -> None:
    compare(FRESH, FRESH)
    compare(_with(0, reason="anything", ml_changes=("x",), drift=True, before={"a": 1}), FRESH)


@pytest.mark.parametrize("saved, message", [
    (_with(0, after={**AFTER, "argv": ["sh", "-c", "id"]}), "after.argv[0] differs"),
    (_with(0, after={**AFTER, "env": {**AFTER["env"], "BASH_ENV": "/tmp/x"}}),
     "after.env.BASH_ENV differs"),
    (_with(0, after={**AFTER, "address": "http://evil:8265"}), "after.address differs"),
    (_with(0, after={**AFTER, "entrypoint": "id"}), "after.entrypoint differs"),
    (_with(0, after=None), "changes[0] local.run.a (create): after differs"),
    (_with(1, action=Action.DELETE, after=None), "its specs plan no-op"),
    (_with(1, moved_from="local.run.z"), "its specs plan the move from None"),
    (_with(0, address="local.run.other"), "its specs plan no change of local.run.other"),
    (replace(FRESH, changes=FRESH.changes[:1]), ("its specs also plan local.run.b (no-op), "
     "which the plan does not list")),
    (replace(FRESH, changes=(*FRESH.changes, Change(
        "kubeflow.Namespace._/victim", Action.DELETE, {"kind": "Namespace"}, None))),
     "changes[2] kubeflow.Namespace._/victim (delete): its specs plan no change"),
])
def test_a_change_its_specs_do_not_plan_is_refused(saved: Plan, message: str) -> None:
    with pytest.raises(StalePlanError, match="^Saved plan does not match what its specs "
                       "compile to now: ") as err:
        compare(saved, FRESH)
    assert message in str(err.value) and "nothing was changed" in str(err.value)


@pytest.mark.parametrize("digests, message", [
    ({"local.run.a": "d9", "local.run.b": "d1"}, ("local.run.a was removed since the plan was "
     "made (planned d9, now absent)")),
    ({"local.run.a": "absent", "local.run.b": "d0"}, ("local.run.b was changed since the plan "
     "was made (planned d0, now d1)")),
])
def test_live_state_read_since_is_a_stale_plan(digests: dict[str, str], message: str) -> None:
    with pytest.raises(StalePlanError, match=f"^Saved plan is stale: {re.escape(message)};"):
        compare(replace(FRESH, read_digests=digests), FRESH)


def test_first_difference_names_the_path() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}, "after") == "after.a[1].b"
    assert first_difference([1, 2], [1, 2, 3], "x") == "x[2]"
    assert first_difference({"a": 1}, {"a": 1, "b": 2}, "x") == "x.b"
    assert first_difference(1, True, "x") == "x" and first_difference(1, 1, "x") is None
