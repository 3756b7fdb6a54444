"""The CRD rules' verdicts kept between runs (``reconciler.kubernetes.cel_verdicts``): the
same object checked again in a new run evaluates no rule and gets the same violations; any
change to what the rules read is a miss; a verdict with a rule not evaluated, an entry of
another key or of the wrong shape, an unsafe folder or ``FTSPEC_CEL_CACHE=off`` are checked
anew."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("celpy")

from ftspec.compiler.crd_rules import Violation
from ftspec.reconciler.kubernetes import cel_verdicts, crd_check

CRD_NAME = "trainjobs.trainer.kubeflow.org"


def _crd(rule: str = "self.numNodes <= 4") -> dict[str, Any]:
    trainer = {"type": "object", "x-kubernetes-validations": [
        {"rule": rule, "message": "at most 4 nodes"},
        {"rule": "self.numNodes >= oldSelf.numNodes", "message": "nodes never shrink"}],
        "properties": {"numNodes": {"type": "integer"}}}
    return {"kind": "CustomResourceDefinition", "spec": {"versions": [{
        "name": "v1alpha1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"trainer": trainer}}}}}}]}}


def _job(nodes: int, note: str = "a") -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "j", "namespace": "ml", "annotations": {"note": note}},
            "spec": {"trainer": {"numNodes": nodes}}}


class _Run:
    """One ftspec run's CRD rules (a new ``CrdRules``, as each plan has), counting the
    objects it evaluates."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, crd: dict[str, Any]) -> None:
        self.evaluated: list[dict[str, Any]] = []
        real = crd_check.check

        def counted(obj: dict[str, Any], *args: Any) -> list[Violation]:
            self.evaluated.append(obj)
            return real(obj, *args)

        monkeypatch.setattr(crd_check, "check", counted)
        self.rules = crd_check.CrdRules(SimpleNamespace(),  # type: ignore[arg-type]
                                        {CRD_NAME: crd})

    def violations(self, obj: dict[str, Any], live: dict[str, Any] | None
                   ) -> tuple[list[str], list[str]]:
        fresh, moved = self.rules.violations(obj, live)
        return [f"{v.field}: {v.message}" for v in fresh], [f"{v.field}: {v.message}"
                                                            for v in moved]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FTSPEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FTSPEC_CEL_CACHE", raising=False)
    return tmp_path / "cache" / "cel"


def test_the_same_check_in_a_later_run_evaluates_no_rule(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _Run(monkeypatch, _crd())
    found = first.violations(_job(5), _job(6))
    assert found == (["spec.trainer.numNodes: at most 4 nodes"],
                     ["spec.trainer.numNodes: nodes never shrink"])
    assert len(first.evaluated) == 2  # on create, then on update from the live object
    later = _Run(monkeypatch, _crd())
    assert later.violations(_job(5), _job(6)) == found
    assert later.evaluated == []
    # an annotation is not what the rules see (kube-apiserver shows them name only)
    assert later.violations(_job(5, note="b"), _job(6, note="c")) == found
    assert later.evaluated == []
    assert len(list(cache_dir.iterdir())) == 1


@pytest.mark.parametrize("change", ["object", "live object", "no live object", "rule"])
def test_a_change_to_what_the_rules_read_is_checked_anew(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    _Run(monkeypatch, _crd()).violations(_job(3), _job(3))
    obj, live, crd = _job(3), _job(3), _crd()
    if change == "object":
        obj = _job(5)
    elif change == "live object":
        live = _job(4)
    elif change == "no live object":
        live = None
    else:
        crd = _crd("self.numNodes <= 2")
    run = _Run(monkeypatch, crd)
    fresh, moved = run.violations(obj, live)
    assert run.evaluated != []
    assert fresh == {"object": ["spec.trainer.numNodes: at most 4 nodes"],
                     "rule": ["spec.trainer.numNodes: at most 4 nodes"]}.get(change, [])
    assert moved == (["spec.trainer.numNodes: nodes never shrink"] if change == "live object" else [])


@pytest.mark.parametrize("root_reads_old", [False, True], ids=["no rule", "a root rule"])
def test_the_live_status_is_in_the_key_only_where_a_rule_reads_it(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch, root_reads_old: bool) -> None:
    """The check enters only the fields the object sets: the live object's status (the
    controller keeps changing it) is read only by a rule at the root that reads oldSelf."""
    crd = _crd()
    if root_reads_old:
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
            "x-kubernetes-validations"] = [{"rule": "oldSelf.metadata.name == self.metadata.name"}]
    _Run(monkeypatch, crd).violations(_job(3), {**_job(3), "status": {"phase": "Running"}})
    run = _Run(monkeypatch, crd)
    assert run.violations(_job(3), {**_job(3), "status": {"phase": "Succeeded"}}) == ([], [])
    assert (run.evaluated != []) == root_reads_old


def test_a_verdict_with_a_rule_not_evaluated_is_not_kept(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _Run(monkeypatch, _crd("self.numNodes <= ("))  # not CEL
    fresh, _ = run.violations(_job(3), None)
    assert fresh and fresh[0].startswith("spec.trainer: rule not evaluated")
    assert not cache_dir.exists() or list(cache_dir.iterdir()) == []


@pytest.mark.parametrize("entry", ["another key's", "wrong shape", "not JSON", "unsafe"])
def test_an_entry_that_is_not_this_verdict_is_a_miss(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    _Run(monkeypatch, _crd()).violations(_job(5), None)
    [path] = cache_dir.iterdir()
    kept = json.loads(path.read_bytes())
    if entry == "another key's":  # a verdict of no violations, copied over this one
        kept = {**kept, "key": "0" * 64, "fresh": []}
    elif entry == "wrong shape":
        kept["fresh"] = [[["spec", True], "m", "r"]]
    path.write_text("{" if entry == "not JSON" else json.dumps(kept))
    if entry == "unsafe":
        os.chmod(cache_dir, 0o777)
    run = _Run(monkeypatch, _crd())
    assert run.violations(_job(5), None) == (["spec.trainer.numNodes: at most 4 nodes"], [])
    assert len(run.evaluated) == 1


def test_off_checks_every_object_anew(cache_dir: Path, monkeypatch: pytest.MonkeyPatch
                                      ) -> None:
    monkeypatch.setenv("FTSPEC_CEL_CACHE", "off")
    for _ in range(2):
        run = _Run(monkeypatch, _crd())
        assert run.violations(_job(5), None) == (["spec.trainer.numNodes: at most 4 nodes"],
                                                 [])
        assert len(run.evaluated) == 1
    assert not cache_dir.exists()


def test_the_key_names_the_evaluator() -> None:
    """A new ftspec or cel-python is a new key: the source of the checking modules and the
    installed evaluator's files are part of it."""
    text = json.loads(cel_verdicts.evaluator())
    assert len(text) == 7
    assert all(isinstance(part, str) and len(part) == 64 for part in text[1:5])
    assert [Path(p[0]).parent.name for p in text[5:]] == ["celpy", "lark"]
