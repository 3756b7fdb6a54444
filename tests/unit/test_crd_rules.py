"""``ftspec.compiler.crd_rules`` over the upstream CRD files: every CEL rule refuses the object
made to break it (create, or update with ``oldSelf``), accepts the valid one, and every rule of
every file is covered (``helpers.cel_cases``)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
import yaml
from ftspec.compiler import crd_rules
from helpers.cel_cases import (
    CASES,
    CLUSTER_RUNTIME,
    NOT_VIOLABLE,
    RAYCLUSTER,
    RAYJOB,
    RUNTIME,
    STATUS_ONLY,
    TRAINJOB,
    RuleCase,
    base_object,
    merge,
    rules_of,
)
from helpers.upstream import crd

FILES = {
    (TRAINJOB, "master"): "kubeflow-trainer/crds/trainer.kubeflow.org_trainjobs.yaml",
    (TRAINJOB, "v2.3.0"): "kubeflow-trainer/crds/v2.3.0/trainer.kubeflow.org_trainjobs.yaml",
    (TRAINJOB, "v2.1.0"): "kubeflow-trainer/crds/v2.1.0/trainer.kubeflow.org_trainjobs.yaml",
    (RUNTIME, "master"): "kubeflow-trainer/crds/trainer.kubeflow.org_trainingruntimes.yaml",
    (CLUSTER_RUNTIME, "master"):
        "kubeflow-trainer/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
    (RAYJOB, "master"): "kuberay/crds/ray.io_rayjobs.yaml",
    (RAYCLUSTER, "master"): "kuberay/crds/ray.io_rayclusters.yaml",
}


@cache
def _crd(relative: str) -> dict[str, Any]:
    with crd(relative).open("rb") as handle:
        loaded: dict[str, Any] = yaml.load(handle, Loader=yaml.CSafeLoader)
    return loaded


def _objects(case: RuleCase) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    base = base_object(case.crd, "job", "ml")
    before = merge(base, case.before) if case.before is not None else None
    return before, merge(base, case.after)


PARAMS = [pytest.param(case, version, id=f"{version}:{case.id}")
          for case in CASES for version in case.versions]


@pytest.mark.slow
@pytest.mark.parametrize(("case", "version"), PARAMS)
def test_rule_refuses_its_object(case: RuleCase, version: str) -> None:
    definition = _crd(FILES[(case.crd, version)])
    before, after = _objects(case)
    base = before if before is not None else base_object(case.crd, "job", "ml")
    assert crd_rules.check(base, definition) == []  # the valid object passes
    found = crd_rules.check(after, definition, before)
    assert [(v.field, case.message in v.message) for v in found] == [(case.field, True)], found
    if before is not None:  # a transition rule: the same object is fine on create
        assert crd_rules.check(after, definition) == []


def test_status_rule() -> None:
    definition = _crd(FILES[(TRAINJOB, "master")])
    obj = base_object(TRAINJOB, "job", "ml")
    ok = merge(obj, {"status": {"trainerStatus": {"lastUpdatedTime": "2026-01-01T00:00:00Z"}}})
    bad = merge(obj, {"status": {"trainerStatus": {"progressPercentage": 10}}})
    assert crd_rules.check(ok, definition) == []
    assert [v.message for v in crd_rules.check(bad, definition)] == [
        "lastUpdatedTime is required when trainerStatus is present"]


@pytest.mark.parametrize("key", sorted(FILES, key=str), ids=lambda k: f"{k[0]}@{k[1]}")
def test_every_rule_is_covered(key: tuple[str, str]) -> None:
    name, version = key
    covered = {(c.path, c.rule) for c in CASES if c.crd == name and version in c.versions}
    excused = {(p, r) for (n, p, r) in {**NOT_VIOLABLE, **STATUS_ONLY} if n == name}
    rules = {(path, rule) for path, rule, _ in rules_of(_crd(FILES[key]))}
    assert rules - covered - excused == set()
    assert covered <= rules


def test_manager_key_change_is_another_entry() -> None:
    definition = _crd(FILES[(TRAINJOB, "master")])
    patch = {"trainingRuntimeSpec": {"template": {"metadata": {"labels": {"a": "b"}}}}}
    obj = base_object(TRAINJOB, "job", "ml")
    before = merge(obj, {"spec": {"runtimePatches": [{"manager": "a.io/x", **patch}]}})
    after = merge(obj, {"spec": {"runtimePatches": [{"manager": "b.io/x", **patch}]}})
    assert crd_rules.check(after, definition, before) == []


def test_enum_refused() -> None:
    definition = _crd(FILES[(RUNTIME, "master")])
    obj = merge(base_object(RUNTIME, "rt", "ml"), {"spec": {"template": {"spec": {
        "failurePolicy": {"rules": [{"name": "r", "action": "RestartEverything"}]}}}}})
    found = crd_rules.check(obj, definition)
    assert [v.field for v in found] == ["spec.template.spec.failurePolicy.rules[0].action"]
