"""A live job object and its pods' log lines -> ``Status`` (pure: the backend reads, this
decides what to show).

- progress: from the first pod whose log carries the launcher's metric records (a TrainJob's
  rank 0 sorts first; a RayJob's driver output is in its submitter pod's log, which
  ``ray job submit`` tails, while the head pod's log is Ray's own);
- elapsed: a RayJob's ``status.startTime``/``endTime``; a TrainJob's creation time to the
  ``Complete``/``Failed`` condition's transition;
- warnings: a pending or failed job's Warning Events and its children's (``events.py``);
  the latest is in a pending job's message;
- reason (a failed job): its condition's message, the latest Warning Event, the first
  container that ended badly
  (``OOMKilled``: out of memory) and the trainer's last exception in that pod's log;
- nodes: a multi-node KubeRay job's driver prints ``[ftspec-node]`` lines per node
  (``runtime.ray_nodes.wire.node_states``); they show in ``platform.nodes``.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from ftspec.reconciler.failure import reason
from ftspec.reconciler.kubernetes.events import describe_warning
from ftspec.reconciler.kubernetes.status import TERMINAL, phase_of
from ftspec.reconciler.model import Phase, Status
from ftspec.reconciler.outputs import location
from ftspec.reconciler.progress import parse_line, status_metrics, tracker_for
from ftspec.runtime.ray_nodes.wire import node_states
from ftspec.spec.ir import Job


def _pod_of(line: str) -> str:
    return line.split("] ", 1)[0] + "] " if line.startswith("[") else ""


def metric_lines(lines: list[str]) -> list[str]:
    """Of ``[pod] text`` lines, the text of the first pod whose log has metric records
    (else of the first pod)."""
    pods: dict[str, list[str]] = {}
    for line in lines:
        pod = _pod_of(line)
        pods.setdefault(pod, []).append(line[len(pod):])
    for texts in pods.values():
        if any(parse_line(text) is not None for text in texts):
            return texts
    return next(iter(pods.values()), [])


def _time(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def times(live: dict[str, Any]) -> tuple[float | None, float | None]:
    """When the job started and ended (epoch seconds; None when not known or not yet)."""
    status = live.get("status") or {}
    created = _time((live.get("metadata") or {}).get("creationTimestamp"))
    if live.get("kind") == "RayJob":
        return _time(status.get("startTime")) or created, _time(status.get("endTime"))
    ended = [_time(c.get("lastTransitionTime")) for c in status.get("conditions") or []
             if c.get("type") in ("Complete", "Failed") and str(c.get("status")) == "True"]
    return created, next((t for t in ended if t is not None), None)


def terminations(pods: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Containers that ended badly: pod, container, reason (``OOMKilled``, ``Error``…),
    exit code, signal, message (what the kubelet recorded), failed init containers first."""
    out = []
    for name in sorted(pods):
        status = pods[name].get("status") or {}
        for key in ("initContainerStatuses", "containerStatuses"):
            for c in status.get(key) or []:
                state = c.get("state") or {}
                ended = state.get("terminated") or (c.get("lastState") or {}).get("terminated")
                if not ended or ended.get("exitCode") == 0 and ended.get("reason") != "OOMKilled":
                    continue
                out.append({k: v for k, v in (
                    ("pod", name), ("container", c.get("name")), ("reason", ended.get("reason")),
                    ("exit_code", ended.get("exitCode")), ("signal", ended.get("signal")),
                    ("message", ended.get("message"))) if v not in (None, "")})
        if status.get("reason") == "Evicted":
            out.append({"pod": name, "reason": "Evicted", "message": status.get("message")})
    return out


def retrying(ended: list[dict[str, Any]]) -> str:
    """A job not over yet whose pods ended badly: the latest and how many, as the Job
    controller retries them (exponential back-off until its backoffLimit)."""
    last = ended[-1]
    what = f"pod {last['pod']}" + (f" container {last['container']}" if last.get("container") else "")
    how = (last.get("reason") or "terminated") + (f" (exit code {last['exit_code']})" if "exit_code" in last else "")
    count = f"{len(ended)} pods ended badly so far" if len(ended) > 1 else "1 pod ended badly so far"
    return f"{what} ended {how}; {count}, retried by the Job controller until its backoffLimit"


def failure(live: dict[str, Any], pods: dict[str, dict[str, Any]], lines: list[str],
            events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Why a failed job failed: the job's own condition or message, the latest Warning
    Event of it or its children, the first container that ended badly (an ``OOMKilled`` is
    out of memory), the trainer's last exception in that pod's log (else in any pod's)."""
    _, message, _ = phase_of(live)
    ended = terminations(pods)
    first = ended[0] if ended else {}
    words = [message] if message else []
    if events:
        words.append(describe_warning(events[-1]))
    if first:
        words.append(f"pod {first['pod']}" + (f" container {first['container']}"
                                             if first.get("container") else "")
                     + f": {first.get('reason') or 'terminated'}"
                     + (f" (exit code {first['exit_code']})" if "exit_code" in first else ""))
    pod = f"[{first['pod']}] " if first.get("pod") else ""
    log = ([line[len(pod):] for line in lines if line.startswith(pod)] if pod
           else [line[len(_pod_of(line)):] for line in lines])
    memory = None
    if first.get("reason") == "OOMKilled" or first.get("reason") == "Evicted" and \
            "memory" in str(first.get("message")):
        memory = f"cpu ({first['reason']}: the container's memory limit)"
    why = reason(exit_code=first.get("exit_code"), log=log, platform_reason="; ".join(words),
                 oom=memory)
    if ended:
        why["terminated"] = ended
    return why


def job_status(job: Job, addr: str, live: dict[str, Any], lines: list[str],
               now: float | None = None, pods: dict[str, dict[str, Any]] | None = None,
               events: list[dict[str, Any]] | None = None) -> Status:
    """``lines``: ``[pod] text`` log lines of the job's pods (none while it is pending);
    ``pods``: the job's pods by name, read once it failed (their termination reasons);
    ``events``: the Warning Events of the job and its children (``events.py``), read while
    it is pending or failed: the latest says why a pending job does not start."""
    phase, message, platform = phase_of(live)
    if events:
        platform = {**platform, "warnings": events}
        if phase is Phase.PENDING:
            message = f"{message}; {describe_warning(events[-1])}"
    tracker = tracker_for(job)
    tracker.feed(metric_lines(lines))
    start, end = times(live)
    ended = phase in TERMINAL
    clock = time.time() if now is None else now
    elapsed = None if start is None or (ended and end is None) else (end or clock) - start
    metrics = status_metrics(tracker, elapsed_s=elapsed, ended=ended)
    nodes = node_states("\n".join(lines))
    if nodes:
        platform = {**platform, "nodes": nodes}
    retried = terminations(pods or {}) if phase not in TERMINAL else []
    if retried:  # the Job controller restarts them with a back-off; the job is not over yet
        platform = {**platform, "terminated": retried}
        message = f"{message}; {retrying(retried)}"
    where = {k: v for k, v in location(job).items() if k != "path"}
    why = failure(live, pods or {}, lines, events) if phase is Phase.FAILED else {}
    return Status(addr, phase, message, platform, metrics=metrics, outputs=where, reason=why)

