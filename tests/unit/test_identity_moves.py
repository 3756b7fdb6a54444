"""A job's identity is its metadata.name (``compiler.build.spec_id``); runs recorded under
the file-stem id an earlier ftspec gave it, or from a renamed file, are moves
(``reconciler.identity``), pure rules tested here; the e2e tests (``tests/e2e/test_rename.py``,
``test_upgrade.py``) run them against real runs, a Ray head and the API server."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import file_id
from ftspec.reconciler.backend import Desired
from ftspec.reconciler.identity import duplicates, moved, named_object_moved
from ftspec.reconciler.kubernetes.comparable import comparable
from ftspec.reconciler.kubernetes.planner import ObjectInput, OwnershipError, decide
from ftspec.reconciler.model import Action
from helpers.jobs import make_job


def test_the_id_is_the_name_or_the_explicit_id_never_the_file() -> None:
    job = make_job()  # built from "tiny-lora.yaml"
    assert job.spec_id == job.name == make_job(metadata={"name": job.name}).spec_id
    assert make_job(metadata={"name": job.name, "id": "pinned"}).spec_id == "pinned"
    assert file_id("specs/My Run.yaml") == "my-run"


def test_moves_are_the_upgrade_of_this_file_or_a_file_that_is_gone(tmp_path: Path) -> None:
    job = make_job()
    spec = str(tmp_path / "my-run.yaml")
    up = moved(job, spec, "my-run", None, tmp_path)
    assert up is not None and up.upgrade and "by the ftspec upgrade" in up.why
    assert moved(job, spec, "my-run", "my-run.yaml", tmp_path) == up  # recorded relative
    gone = moved(job, spec, "old", "old.yaml", tmp_path)
    assert gone is not None and not gone.upgrade and gone.why.startswith("renamed from old.yaml")
    (tmp_path / "old.yaml").write_text("x")
    assert moved(job, spec, "old", "old.yaml", tmp_path) is None  # that file may own it
    assert moved(job, spec, "other", "old.yaml", tmp_path) is None  # not that file's id
    pinned = make_job(metadata={"name": job.name, "id": "pinned"})
    assert moved(pinned, spec, "my-run", None, tmp_path) is None  # an explicit id never moves


def test_an_object_of_this_name_moves_unless_another_spec_may_own_it(tmp_path: Path) -> None:
    job = make_job()
    spec = str(tmp_path / "job.yaml")
    assert named_object_moved(job, spec, "gone", set(), tmp_path) is not None
    assert named_object_moved(job, spec, "gone", {"gone"}, tmp_path) is None
    (tmp_path / "gone.yml").write_text("x")
    assert named_object_moved(job, spec, "gone", set(), tmp_path) is None


def _desired(job_kwargs: dict[str, object], spec_file: str) -> Desired:
    return Desired(job=make_job(**job_kwargs), artifacts=(), spec_file=spec_file)  # type: ignore[arg-type]


def test_one_identity_twice_is_refused_at_the_second_name_per_namespace_on_kubernetes(
        ) -> None:
    kube = {"deploy": {"target": "kubeflow"}}
    found = duplicates([_desired({}, "a.yaml"), _desired({}, "b.yaml")])
    assert [d.code for d in found] == ["identity.duplicate"]
    assert found[0].path == ("metadata", "name") and "a.yaml also declares" in found[0].summary
    assert not duplicates([_desired({**kube, "metadata": {"name": "tiny-lora", "namespace": "a"}},
                                    "a.yaml"),
                           _desired({**kube, "metadata": {"name": "tiny-lora", "namespace": "b"}},
                                    "b.yaml")])


def _relabelled(value: Any, spec_id: str) -> Any:
    """Every copy of the spec-id label in ``value`` set to ``spec_id`` (as the previous
    release wrote the object under its file's name)."""
    if isinstance(value, list):
        return [_relabelled(v, spec_id) for v in value]
    if isinstance(value, dict):
        return {k: spec_id if k == "ftspec.dev/spec-id" else _relabelled(v, spec_id)
                for k, v in value.items()}
    return value


def test_an_adopted_object_compares_without_its_old_id_and_says_why() -> None:
    from ftspec.targets.kuberay import rayjob

    job = make_job(deploy={"target": "kuberay"})
    desired = rayjob(job)
    live = _relabelled(json.loads(json.dumps(desired)), "job")
    assert live["metadata"]["labels"]["ftspec.dev/spec-id"] == "job"
    assert live["spec"]["metadata"]["ftspec.dev/spec-id"] == "job"  # the Ray job's copy
    inp = ObjectInput("kuberay", job.spec_id, "job.yaml", desired, live)
    with pytest.raises(OwnershipError, match="managed by spec 'job'"):
        decide(inp)  # without the move, another spec's object is never taken over
    change = decide(replace(inp, adopt_from="job", moved="id changed"))
    assert change.action is Action.NOOP and change.moved_from == change.address
    assert comparable(live)["spec"] == comparable(desired)["spec"]  # the copies inside
