"""Fuzzing saved plans: a valid plan, mutated, then read and bound to the plan its specs give.

Each mutant is a saved plan with one to three mutations at random places (a key removed, a
value replaced by other JSON, a value nested thousands deep, a huge number, a change
repeated, a field renamed), written with its checksum recomputed (as anyone can) or left as
it was. Reading it (``saved.load_plan``) and binding it to the plan its specs give now
(``bound.compare``, against the plan the file was made from) must end in one of two ways:
a clear refusal (``BackendError``, its message naming the file or what differs), or a plan
equal to the original in everything apply uses (addresses, actions, ``after``, moves).
Any other exception — ``RecursionError``, ``KeyError``, ``TypeError``, ``AttributeError``
— fails the test. Before the fix the same mutants ended in those four (issue 34).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.bound import compare
from ftspec.reconciler.model import Action, Change, Plan
from ftspec.reconciler.saved import _checksum, load_plan, plan_document
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

LOCAL_AFTER: dict[str, Any] = {
    "spec_id": "tiny", "spec_file": "tiny.yaml", "launcher": "torchtune", "name": "tiny",
    "argv": ["/venv/bin/tune", "run", "lora_finetune_single_device", "--config",
             ".ftspec/runs/tiny/launch/config.yaml"],
    "env": {"PYTHONUNBUFFERED": "1"}, "files": {"config.yaml": "a: 1\n"},
    "run_dir": ".ftspec/runs/tiny", "log": ".ftspec/runs/tiny/train.log", "notes": [],
    "summary": {"learning_rate": 0.0002, "effective_batch": 8}, "applied": "e30="}
MANIFEST: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "llama", "namespace": "ml", "labels": {
        "app.kubernetes.io/managed-by": "ftspec", "ftspec.dev/spec-id": "llama"}},
    "spec": {"runtimeRef": {"name": "torchtune-llama3.2-1b"}, "trainer": {
        "numNodes": 1, "args": ["epochs=1", "batch_size=4"],
        "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}}}}
ORIGINAL = Plan(
    "local",
    (Change("local.run.tiny", Action.CREATE, None, LOCAL_AFTER, reason="no run recorded",
            spec_file="tiny.yaml"),
     Change("local.run.old", Action.DELETE, {"spec_id": "old", "pid": 12}, None,
            reason="spec id renamed", spec_file="tiny.yaml"),
     Change("kubeflow.TrainJob.ml/llama", Action.REPLACE, {**MANIFEST, "spec": {}}, MANIFEST,
            reason="spec.trainer forces replacement", spec_file="job.yaml",
            ml_changes=("GPUs 4 -> 2",))),
    {"local.run.tiny": "absent", "local.run.old": "d1", "kubeflow.TrainJob.ml/llama": "rv:7"},
    {"tiny.yaml": "b1afba40f8bc68f8"},
    inputs={"specs": ["/p/tiny.yaml"], "overlays": [], "sets": [], "namespace": None})

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8)
DEEP = "\x00deep\x00"
KINDS = ("drop", "replace", "deep", "huge", "repeat", "rename", "type")


def _places(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``doc`` (a path of keys and indexes)."""
    out = [path]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _places(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _places(value, (*path, i))
    return out


def _mutate(doc: dict[str, Any], data: st.DataObject) -> None:
    places = [p for p in _places(doc) if p]
    path = data.draw(st.sampled_from(places), label="place")
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    kind = data.draw(st.sampled_from(KINDS), label="mutation")
    if kind == "drop":
        del parent[last]
    elif kind == "replace":
        parent[last] = data.draw(JSON, label="value")
    elif kind == "deep":
        parent[last] = DEEP  # written out as 3000 nested arrays (``_write``)
    elif kind == "huge":
        parent[last] = data.draw(st.sampled_from([10 ** 500, -(10 ** 80), 1e308 * 10, 2 ** 64]))
    elif kind == "repeat" and isinstance(parent, list):
        parent.append(parent[last])
    elif kind == "rename" and isinstance(parent, dict):
        parent[f"{last}_"] = parent.pop(last)
    else:
        value = parent[last]
        parent[last] = [value] if not isinstance(value, list) else {"x": value}


def _write(path: Path, doc: dict[str, Any], recompute: bool) -> None:
    body = {k: v for k, v in doc.items() if k != "checksum"}
    if recompute:
        body["checksum"] = _checksum(body)
    elif "checksum" in doc:
        body["checksum"] = doc["checksum"]
    nested = "[" * 3000 + "]" * 3000
    path.write_text(json.dumps(body).replace(json.dumps(DEEP), nested))


def _uses(plan: Plan) -> list[tuple[str, str, str, str | None]]:
    return [(c.address, c.action.value, json.dumps(c.after, sort_keys=True), c.moved_from)
            for c in plan.changes]


@pytest.mark.slow
@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), count=st.integers(1, 3), recompute=st.booleans())
def test_mutated_saved_plans_are_refused_cleanly_or_bind_unchanged(
        tmp_path: Path, data: st.DataObject, count: int, recompute: bool) -> None:
    doc = json.loads(json.dumps(plan_document(ORIGINAL)))
    for _ in range(count):
        _mutate(doc, data)
    path = tmp_path / "plan.json"
    _write(path, doc, recompute)
    try:
        loaded = load_plan(path)
        compare(loaded, ORIGINAL)
    except BackendError as exc:
        message = str(exc)
        assert message and "Traceback" not in message
        assert message.startswith((str(path), "cannot read saved plan", "Saved plan")), message
        event("refused: " + ("read" if message.startswith("cannot read") else "field"
                             if message.startswith(str(path)) else "binding"))
        return
    assert _uses(loaded) == _uses(ORIGINAL)
    event("bound, unchanged")
