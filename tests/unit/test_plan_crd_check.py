"""``plan``'s own check against a live CRD that carries its CEL rules (as every modern cluster's
does; a unit test, so the reader answers with the upstream file):
create rules give a located error, an update that breaks a transition rule is a replacement."""

from __future__ import annotations

from typing import Any

import yaml
from ftspec.reconciler.kubernetes.crd_check import CrdRules, rule_error
from helpers.cel_cases import TRAINJOB, base_object, merge
from helpers.upstream import TRAINJOB_CRDS, crd


class _Reader:
    """Answers ``Reader.crd`` with the upstream TrainJob CRD (pure logic under test)."""

    def __init__(self) -> None:
        with crd(TRAINJOB_CRDS["master"]).open("rb") as handle:
            self.definition = yaml.load(handle, Loader=yaml.CSafeLoader)
        self.asked: list[str] = []

    def crd(self, name: str) -> dict[str, Any] | None:
        self.asked.append(name)
        return self.definition if name == TRAINJOB else {"missing": True}


def test_create_rule_and_transition_rule() -> None:
    reader = _Reader()
    rules = CrdRules(reader)  # type: ignore[arg-type]
    obj = merge(base_object(TRAINJOB, "job", "ml"), {"spec": {"managedBy": "example.com/x"}})
    broken, moved = rules.violations(obj, None)
    assert [v.field for v in broken] == ["spec.managedBy"] and moved == []
    err = rule_error(obj, broken[0], {"trainjob": {"spec": {"managedBy": "example.com/x"}}})
    assert err.spec_path == "overrides.trainjob.spec.managedBy"
    live = merge(base_object(TRAINJOB, "job", "ml"), {"spec": {"trainer": {"numNodes": 1}}})
    new = merge(live, {"spec": {"trainer": {"numNodes": 2}}})
    broken, moved = rules.violations(new, live)
    assert broken == [] and [(v.field, v.message) for v in moved] == [
        ("spec.trainer", "field is immutable")]
    rules.violations(new, live)
    assert reader.asked == [TRAINJOB]  # read once per plan
