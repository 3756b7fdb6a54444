"""Logs of a job's pods, found by label selectors the controllers set; ``follow`` polls.

Following polls each pod's whole log (``GET pods/NAME/log``) every ``POLL_S`` and prints what
is new, rather than holding one streaming connection per pod: pods come and go (a JobSet
restarts them, a RayJob's submitter appears late), and the loop must notice the job's end,
which a log stream does not tell. A pod whose log cannot be read yet (not scheduled, its
container not started) is skipped until it can be.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes.resources import KINDS, describe
from ftspec.reconciler.kubernetes.status import TERMINAL, phase_of
from ftspec.reconciler.kubernetes.transport import Transport
from ftspec.reconciler.logread import LogFollowerText

POLL_S = 2.0
MAX_TAIL_PODS = 2
"""``recent_lines`` reads at most this many pods: the trainer's rank 0 (a TrainJob) or the
submitter and head (a RayJob) carry the metric records."""


def selectors(live: dict[str, Any]) -> list[str]:
    name = (live.get("metadata") or {}).get("name")
    if live.get("kind") == "TrainJob":
        return [f"jobset.sigs.k8s.io/jobset-name={name}"]
    out = [f"batch.kubernetes.io/job-name={name}", f"job-name={name}"]
    cluster = (live.get("status") or {}).get("rayClusterName")
    if cluster:
        out.append(f"ray.io/cluster={cluster},ray.io/node-type=head")
    return out


def job_pods(t: Transport, live: dict[str, Any], selector: str | None = None
             ) -> dict[str, dict[str, Any]]:
    """The job's pods by name; ``selector`` (a label selector) narrows them, e.g. to one
    rank: ``jobset.sigs.k8s.io/job-index=0`` or ``batch.kubernetes.io/job-completion-index=1``."""
    ns = (live.get("metadata") or {}).get("namespace")
    pods: dict[str, dict[str, Any]] = {}
    for base in selectors(live):
        query = f"{base},{selector}" if selector else base
        out = t.request("GET", KINDS["Pod"].path(ns), query={"labelSelector": query},
                        verb="list", what=f"pods in namespace {ns}") or {}
        for pod in out.get("items") or []:
            pods.setdefault(pod["metadata"]["name"], pod)
    return pods


def job_logs(t: Transport, live: dict[str, Any], *, follow: bool = False,
             tail: int | None = None, selector: str | None = None,
             reread: Callable[[], dict[str, Any] | None] | None = None) -> Iterator[str]:
    """Lines ``[pod] text`` of the job's pods; with ``follow``, until the job ends
    (``reread`` gives the live job again; None once it is gone)."""
    pods = job_pods(t, live, selector)
    if not pods and not follow:
        phase, message, _ = phase_of(live)
        raise BackendError(
            f"{describe(live)} has no pods yet (phase {phase.value}: {message})",
            hint="the controller creates pods once the job is admitted; see `ftspec status`")
    if not follow:
        return _once(t, live, pods, tail)
    return _follow(t, live, selector, tail, reread or (lambda: live))


def _once(t: Transport, live: dict[str, Any], pods: dict[str, dict[str, Any]],
          tail: int | None) -> Iterator[str]:
    ns = (live.get("metadata") or {}).get("namespace")
    for name in sorted(pods):
        for line in _read(t, ns, name, pods[name], tail).splitlines():
            yield f"[{name}] {line}"


def _follow(t: Transport, live: dict[str, Any], selector: str | None, tail: int | None,
            reread: Callable[[], dict[str, Any] | None]) -> Iterator[str]:
    ns = (live.get("metadata") or {}).get("namespace")
    seen: dict[str, LogFollowerText] = {}
    current: dict[str, Any] | None = live
    while True:
        ended = current is None or phase_of(current)[0] in TERMINAL
        for name, pod in sorted(job_pods(t, live, selector).items()):
            try:
                text = _read(t, ns, name, pod, None)
            except BackendError:
                continue  # not scheduled or not started yet: no log to read
            first = name not in seen
            lines = seen.setdefault(name, LogFollowerText()).new_lines(text, final=ended)
            if first and tail is not None:
                lines = lines[-tail:] if tail > 0 else []
            for line in lines:
                yield f"[{name}] {line}"
        if ended:
            return
        time.sleep(POLL_S)
        current = reread()


def recent_lines(t: Transport, live: dict[str, Any], *, tail: int, limit_bytes: int
                 ) -> tuple[list[str], dict[str, dict[str, Any]], list[str]]:
    """Bounded reads for ``list`` and ``output``: the last ``tail`` lines (at most
    ``limit_bytes``) of the logs of the job's first ``MAX_TAIL_PODS`` pods, those with a
    ``node`` container (the trainer) first, as ``[pod] text`` lines; the job's pods; and why
    a pod's log could not be read (one line each)."""
    pods = job_pods(t, live)
    ns = (live.get("metadata") or {}).get("namespace")
    order = sorted(pods, key=lambda n: ("node" not in _containers(pods[n]), n))
    lines: list[str] = []
    unread: list[str] = []
    for name in order[:MAX_TAIL_PODS]:
        try:
            text = _read(t, ns, name, pods[name], tail, limit_bytes)
        except BackendError as exc:
            unread.append(f"pod {name}: {exc}")
            continue
        lines += [f"[{name}] {line}" for line in text.splitlines()]
    return lines, pods, unread


def _containers(pod: dict[str, Any]) -> list[str]:
    return [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []
            if isinstance(c, dict)]


def _read(t: Transport, ns: str | None, name: str, pod: dict[str, Any], tail: int | None,
          limit_bytes: int | None = None) -> str:
    containers = _containers(pod)
    container = "node" if "node" in containers else (containers[0] if containers else None)
    query = {"container": container} if container else {}
    if tail is not None:
        query["tailLines"] = str(tail)
    if limit_bytes is not None:
        query["limitBytes"] = str(limit_bytes)
    return t.request_text("GET", KINDS["Pod"].path(ns, name) + "/log", query=query,
                          what=f"logs of pod {ns}/{name}")
