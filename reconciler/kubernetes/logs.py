"""Logs of a job's pods, found by label selectors the controllers set."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes.resources import KINDS, describe
from ftspec.reconciler.kubernetes.status import phase_of
from ftspec.reconciler.kubernetes.transport import Transport


def selectors(live: dict[str, Any]) -> list[str]:
    name = (live.get("metadata") or {}).get("name")
    if live.get("kind") == "TrainJob":
        return [f"jobset.sigs.k8s.io/jobset-name={name}"]
    out = [f"batch.kubernetes.io/job-name={name}", f"job-name={name}"]
    cluster = (live.get("status") or {}).get("rayClusterName")
    if cluster:
        out.append(f"ray.io/cluster={cluster},ray.io/node-type=head")
    return out


def job_logs(t: Transport, live: dict[str, Any], *, follow: bool = False,
             tail: int | None = None) -> Iterator[str]:
    ns = (live.get("metadata") or {}).get("namespace")
    pods: dict[str, dict[str, Any]] = {}
    for selector in selectors(live):
        out = t.request("GET", KINDS["Pod"].path(ns), query={"labelSelector": selector},
                        verb="list", what=f"pods in namespace {ns}") or {}
        for pod in out.get("items") or []:
            pods.setdefault(pod["metadata"]["name"], pod)
    if not pods:
        phase, message, _ = phase_of(live)
        raise BackendError(
            f"{describe(live)} has no pods yet (phase {phase.value}: {message})",
            hint="the controller creates pods once the job is admitted; see `ftspec status`")
    return _stream(t, ns, pods, tail)


def _stream(t: Transport, ns: str | None, pods: dict[str, dict[str, Any]], tail: int | None
            ) -> Iterator[str]:
    for name in sorted(pods):
        containers = [c["name"] for c in (pods[name].get("spec") or {}).get("containers") or []]
        container = "node" if "node" in containers else (containers[0] if containers else None)
        query = {"container": container} if container else {}
        if tail is not None:
            query["tailLines"] = str(tail)
        raw = t.request_text("GET", KINDS["Pod"].path(ns, name) + "/log", query=query,
                             what=f"logs of pod {ns}/{name}")
        for line in raw.splitlines():
            yield f"[{name}] {line}"
