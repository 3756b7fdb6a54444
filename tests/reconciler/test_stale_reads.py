"""The one staleness check at apply (``engine.check_fresh``) over what each backend reads
again (``DigestReader.read_digests``), and the words each backend says it in."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler import engine
from ftspec.reconciler.backend import ABSENT, NullReporter, StalePlanError, StaleWords
from ftspec.reconciler.backends import BackendOptions
from ftspec.reconciler.engine import check_fresh, stale_reads
from ftspec.reconciler.kubernetes.backend import KubernetesBackend
from ftspec.reconciler.local.backend import LocalBackend
from ftspec.reconciler.model import Action, Change, Plan
from ftspec.reconciler.ray.backend import RayBackend
from ftspec.spec.ownership import OWNER_LABEL, OWNER_VALUE, SPEC_ID_LABEL
from security.localstate import plant_record, record_for

WORDS = StaleWords("the thing at {address}", created="appeared")


def _plan(read: dict[str, str], *changes: Change) -> Plan:
    return Plan("fake", changes, read_digests=read)


def test_only_addresses_both_sides_read_and_that_differ_are_stale() -> None:
    planned = {"a": "1", "b": ABSENT, "c": "3", "gone": "4"}
    assert stale_reads(planned, {"a": "1", "b": "2", "c": ABSENT}) == [
        ("b", ABSENT, "2"), ("c", "3", ABSENT)]
    assert stale_reads(planned, {"a": "1"}) == []


def test_the_first_stale_address_is_named_in_the_backends_words() -> None:
    plan = _plan({"x.a": "1", "x.b": ABSENT})
    check_fresh(plan, {"x.a": "1", "x.b": ABSENT}, WORDS)  # nothing changed: no error
    with pytest.raises(StalePlanError) as caught:
        check_fresh(plan, {"x.a": ABSENT, "x.b": "9"}, WORDS, "; see the lock")
    assert str(caught.value) == ("Saved plan is stale: the thing at x.a was removed since "
                                 "the plan was made; see the lock")
    assert caught.value.hint == "run `ftspec plan` again"
    with pytest.raises(StalePlanError, match="the thing at x.b appeared since"):
        check_fresh(plan, {"x.b": "9"}, WORDS)


@pytest.mark.parametrize(("planned", "record", "how"), [
    (ABSENT, True, "recorded"), ("0123456789abcdef", True, "replaced"),
    ("0123456789abcdef", False, "removed")])
def test_local_apply_refuses_a_run_record_that_changed_since_its_plan(
        tmp_path: Path, planned: str, record: bool, how: str) -> None:
    if record:
        plant_record(tmp_path, record_for(2**22 - 7, time.time()))
    backend = LocalBackend(tmp_path)
    plan = _plan({"local.run.tiny-local": planned})
    with pytest.raises(StalePlanError, match=f"^Saved plan is stale: the run of "
                       f"local.run.tiny-local was {how} since the plan was made$"):
        engine.apply(backend, plan, NullReporter())
    now = backend.read_digests(plan)["local.run.tiny-local"]
    assert (now == ABSENT) is not record


URL = "http://127.0.0.1:8265"


class _Jobs:
    """A Jobs API holding one ftspec job of spec ``b``; what is submitted is kept."""

    address = URL

    def __init__(self) -> None:
        self.submitted: list[dict[str, Any]] = []
        self.listings = 0

    def list_jobs(self) -> list[dict[str, Any]]:
        self.listings += 1
        return [{"submission_id": "b-1", "status": "RUNNING",
                 "metadata": {OWNER_LABEL: OWNER_VALUE, SPEC_ID_LABEL: "b"}}]

    def submit(self, payload: dict[str, Any]) -> str:
        self.submitted.append(payload)
        return str(payload["submission_id"])


def test_ray_apply_refuses_a_stale_plan_before_it_submits_any_job() -> None:
    backend, jobs = RayBackend(URL), _Jobs()
    backend._apis[URL] = jobs  # type: ignore[assignment]
    plan = _plan({"ray.job.a": ABSENT, "ray.job.b": ABSENT},
                 *(Change(f"ray.job.{n}", Action.CREATE, None,
                          {"address": URL, "submission_id": f"{n}-1", "entrypoint": "true"})
                   for n in "ab"))
    with pytest.raises(StalePlanError, match="^Saved plan is stale: the Ray jobs of ray.job.b "
                                             "changed since the plan was made$"):
        engine.apply(backend, plan, NullReporter())
    # ray.job.a comes first and is fresh: before, it was submitted and then b refused
    assert jobs.submitted == []
    assert jobs.listings == 1  # one listing of the cluster for every address
    fresh = backend.read_digests(plan)
    assert fresh["ray.job.a"] == ABSENT and fresh["ray.job.b"] != ABSENT
    done = engine.apply(backend, _plan({"ray.job.a": ABSENT}, plan.changes[0]), NullReporter())
    assert [c.address for c in done.applied] == ["ray.job.a"]
    assert [p["submission_id"] for p in jobs.submitted] == ["a-1"]


class _Cluster:
    """A Kubernetes API serving ``live`` (path -> object) that allows every access review and
    lease; each other write is kept (method, path)."""

    def __init__(self, live: dict[str, dict[str, Any]]) -> None:
        self.live = live
        self.writes: list[tuple[str, str]] = []

    def request(self, method: str, path: str, body: Any = None, **_: Any
                ) -> dict[str, Any] | None:
        if path.endswith("/selfsubjectaccessreviews"):
            return {"status": {"allowed": True}}
        if "/leases" in path:
            return {}
        if method == "GET":
            return self.live.get(path)
        self.writes.append((method, path))
        return {}


def _config_map(name: str, rv: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "labels": {
        OWNER_LABEL: OWNER_VALUE, SPEC_ID_LABEL: "a"}}
    if rv:
        meta["resourceVersion"] = rv
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def test_kubernetes_apply_refuses_an_object_changed_since_its_plan_before_writing() -> None:
    path = "/api/v1/namespaces/ml/configmaps/"
    cluster = _Cluster({"/api/v1/namespaces/ml": {"kind": "Namespace"},
                        path + "b": _config_map("b", "7")})
    backend = KubernetesBackend(BackendOptions())
    backend._transport = cluster  # type: ignore[assignment]
    plan = _plan({"kubeflow.ConfigMap.ml/a": ABSENT, "kubeflow.ConfigMap.ml/b": "rv:5"},
                 Change("kubeflow.ConfigMap.ml/a", Action.CREATE, None, _config_map("a")),
                 Change("kubeflow.ConfigMap.ml/b", Action.UPDATE, _config_map("b", "5"),
                        _config_map("b")))
    assert backend.read_digests(plan) == {"kubeflow.ConfigMap.ml/a": ABSENT,
                                          "kubeflow.ConfigMap.ml/b": "rv:7"}
    with pytest.raises(StalePlanError) as caught:
        engine.apply(backend, plan, NullReporter())
    assert str(caught.value) == ("Saved plan is stale: kubeflow.ConfigMap.ml/b was changed "
                                 "since the plan was made (planned rv:5, now rv:7)")
    assert caught.value.hint == "run `ftspec plan --out FILE` again and apply the new plan"
    assert cluster.writes == []  # ml/a comes first and is fresh: not created either
    # a plan that changes nothing reads nothing again: a running job's status moves its
    # resourceVersion on, and applying nothing is never stale
    unchanged = _plan({"kubeflow.ConfigMap.ml/b": "rv:5"},
                      Change("kubeflow.ConfigMap.ml/b", Action.NOOP, _config_map("b", "5"),
                             _config_map("b")))
    assert backend.read_digests(unchanged) == {}
    assert engine.apply(backend, unchanged, NullReporter()).applied == ()
    assert cluster.writes == []
    fresh = replace(plan, read_digests=backend.read_digests(plan))
    done = engine.apply(backend, fresh, NullReporter())
    assert [c.address for c in done.applied] == ["kubeflow.ConfigMap.ml/a",
                                                 "kubeflow.ConfigMap.ml/b"]
    assert cluster.writes == [("PATCH", path + "a"), ("PATCH", path + "b")]
