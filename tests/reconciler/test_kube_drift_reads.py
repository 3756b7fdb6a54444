"""A Kubernetes plan reads each live TrainJob's JobSet and runtime (runtime drift) on the
plan's pool, all at once, and says the warnings in the objects' order as before."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes.plan_steps import Context, Draft, Pending, plan_objects
from ftspec.reconciler.kubernetes.planner import address
from ftspec.reconciler.kubernetes.reads import Applying, Reader
from ftspec.reconciler.kubernetes.runtime_drift import drift_warning, runtime_drift
from unit.test_reconciler_engine import live_of, trainjob

NAMES = ("j0", "j1", "j2")
WAIT_S = 60.0
"""How long a GET waits for the others to be in flight too: a plan that reads them one
after another breaks the barrier (the test fails) instead of hanging."""


def _trainjob(name: str) -> dict[str, Any]:
    obj = trainjob()
    obj["metadata"]["name"] = name
    live = live_of(obj)
    live["metadata"]["uid"] = f"uid-{name}"
    return live


def _node(image: str) -> dict[str, Any]:
    return {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [
        {"name": "node", "image": image}]}}}}}


RUNTIME = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
           "metadata": {"name": "rt"},
           "spec": {"template": {"spec": {"replicatedJobs": [_node("trainer:v2")]}}}}


def _jobset(name: str) -> dict[str, Any]:
    return {"kind": "JobSet", "metadata": {"name": name, "namespace": "ml",
                                           "ownerReferences": [{"uid": f"uid-{name}"}]},
            "spec": {"replicatedJobs": [_node(f"trainer:{name}")]}}


class _Server:
    """Answers the JobSet GETs only once all of them are in flight (a barrier), then the
    runtime's; records the thread of each request. ``fail``: JobSet name -> what its GET
    raises."""

    def __init__(self, fail: dict[str, BaseException] | None = None) -> None:
        self.barrier = threading.Barrier(len(NAMES), timeout=WAIT_S)
        self.fail = fail or {}
        self.requests: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        with self._lock:
            self.requests.append((method, path, threading.current_thread().name))
        if "/jobsets/" in path:
            self.barrier.wait()  # every JobSet GET in flight at once, or BrokenBarrierError
            name = path.rsplit("/", 1)[1]
            if name in self.fail:
                raise self.fail[name]
            return _jobset(name)
        if "/clustertrainingruntimes/" in path:
            return RUNTIME
        raise AssertionError(f"unexpected {method} {path}")


def _plan(server: _Server, draft: Draft) -> None:
    reader = Reader(server)  # type: ignore[arg-type]
    try:
        job = SimpleNamespace(target="kubeflow", spec_id="a")
        d: Any = SimpleNamespace(job=job, spec_file="a.yaml", doc=None)
        lives = [_trainjob(n) for n in NAMES]
        pending = []
        for live in lives:
            unchanged: Future[bool] = Future()
            unchanged.set_result(True)  # unchanged since applied: the live object is the result
            result: Future[dict[str, Any] | None] = Future()
            result.set_result(live)
            pending.append(Pending(d, live, address("kubeflow", live), None,
                                   Applying(unchanged, result)))
        by_addr = {p.addr: p.obj for p in pending}
        ctx = Context(reader, None, by_addr, {"a"}, None)  # type: ignore[arg-type]
        plan_objects(ctx, pending, draft)
    finally:
        reader.close(cancel=True)


def test_each_trainjobs_runtime_drift_is_read_on_the_pool_at_once_and_said_in_order() -> None:
    server = _Server()
    draft = Draft(["a compile warning"])
    _plan(server, draft)
    assert [c.action.value for c in draft.changes] == ["no-op"] * len(NAMES)
    expected = [drift_warning(_trainjob(n), RUNTIME,
                              runtime_drift(_trainjob(n), _jobset(n), RUNTIME)) for n in NAMES]
    assert all("trainer:v2" in w for w in expected)
    assert draft.warnings == ["a compile warning", *expected]
    kinds = sorted((m, p.split("/")[-2]) for m, p, _ in server.requests)
    assert kinds == ([("GET", "clustertrainingruntimes")] * len(NAMES)
                     + [("GET", "jobsets")] * len(NAMES))  # one of each per TrainJob
    main = threading.current_thread().name
    assert all(thread != main for _, _, thread in server.requests)


def test_the_first_failed_read_in_the_objects_order_raises_and_a_backend_error_is_none() -> None:
    first, later = RuntimeError("j1's read"), RuntimeError("j2's read")
    server = _Server({"j0": BackendError("no JobSet API"), "j1": first, "j2": later})
    with pytest.raises(RuntimeError) as caught:
        _plan(server, Draft([]))
    assert caught.value is first  # whichever finished first: j1 comes before j2


def test_settled_warnings_take_their_places_among_the_others() -> None:
    draft = Draft(["w0"])
    said: list[Future[str | None]] = [Future() for _ in range(4)]
    draft.warn_later(said[0])
    draft.warn_later(said[1])
    draft.warnings.append("w1")
    draft.warn_later(said[2])
    draft.warnings.append("w2")
    draft.warn_later(said[3])
    for fut, value in zip(said, ["d0", None, "d2", "d3"]):
        fut.set_result(value)
    draft.settle()
    assert draft.warnings == ["w0", "d0", "w1", "d2", "w2", "d3"]
    assert draft.later == []
