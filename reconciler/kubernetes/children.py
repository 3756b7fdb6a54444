"""What a job's controller made under the job's name, which a replacement must not meet.

The Trainer (v2.3.0, ``plugins/jobset``) finds a TrainJob's JobSet by the TrainJob's name and
namespace, without checking its owner, and copies its Complete / Failed condition: a TrainJob
created again under the same name while the old JobSet is still there takes the old result
and never runs. KubeRay finds a RayJob's submitter Job the same way (``batch/v1`` Job named
like the RayJob) and labels the RayCluster it made with the RayJob's name. Before creating
a job (a replace: once the old job itself is gone; a create: a job destroyed a moment ago)
apply therefore waits until these are gone too (the garbage collector deletes them once
their owner is), bounded, and says what still stands.

The wait is ours rather than a foreground deletion alone: a foreground delete leaves the
owner in place until the garbage collector has removed its children, so it needs a
kube-controller-manager; the wait holds on any cluster and names what blocks it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ftspec.reconciler.backend import BackendError, Reporter
from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.resources import KINDS
from ftspec.reconciler.kubernetes.transport import Transport
from ftspec.reconciler.pace import duration

CHILDREN_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Child:
    """An object (or the objects of a label selector) a job's controller creates."""

    what: str
    path: str
    selector: str | None = None

    def present(self, t: Transport) -> list[dict[str, Any]] | None:
        """The ones still there (None: the user may not read them)."""
        query = {"labelSelector": self.selector} if self.selector else None
        try:
            got = t.request("GET", self.path, query=query, verb="get", what=self.what,
                            ok_404=True)
        except ApiError as exc:
            if exc.status == 403:
                return None
            raise
        if got is None:  # gone, or a kind this cluster does not serve
            return []
        return list(got.get("items") or []) if self.selector else [got]


def children(obj: dict[str, Any]) -> list[Child]:
    """What ``obj``'s controller names after it (none for other kinds)."""
    meta = obj.get("metadata") or {}
    ns, name = meta.get("namespace"), meta.get("name")
    if obj.get("kind") == "TrainJob":
        return [Child(f"JobSet {ns}/{name}", KINDS["JobSet"].path(ns, name))]
    if obj.get("kind") == "RayJob":
        return [Child(f"submitter Job {ns}/{name}", KINDS["Job"].path(ns, name)),
                Child(f"RayClusters of RayJob {ns}/{name}", KINDS["RayCluster"].path(ns),
                      f"ray.io/originated-from-cr-name={name},ray.io/originated-from-crd=RayJob")]
    return []


def _owners(items: list[dict[str, Any]]) -> str:
    refs = [f"{r.get('kind')} {r.get('name')} (uid {r.get('uid')})" for item in items
            for r in (item.get("metadata") or {}).get("ownerReferences") or []]
    return ", ".join(refs) or "no owner"


def wait_children_gone(t: Transport, obj: dict[str, Any], reporter: Reporter, addr: str,
                       timeout_s: float | None = None) -> None:
    """Return once nothing ``children(obj)`` names exists; raise after ``timeout_s``."""
    limit = CHILDREN_TIMEOUT_S if timeout_s is None else timeout_s
    start = time.monotonic()
    for child in children(obj):
        while True:
            items = child.present(t)
            elapsed = time.monotonic() - start
            if items is None:
                reporter.event(f"warning: could not check that {child.what} is gone (not "
                               "allowed to read it); a new job of this name may take its "
                               "result", warning=True)
                break
            if not items:
                break
            if elapsed > limit:
                raise BackendError(
                    f"{child.what} (owned by {_owners(items)}) is still there after "
                    f"{elapsed:.0f} s; the new {obj.get('kind')} was not created, because "
                    "its controller would find that one by name and take its result",
                    hint="the garbage collector deletes it once its owner is gone: check "
                    "kube-controller-manager, or delete it yourself, then run apply again",
                    retryable=True)
            reporter.event(f"{addr}: waiting until {child.what} is gone... "
                           f"[{duration(elapsed)} elapsed]", address=addr, waiting=True,
                           elapsed=round(elapsed, 1))
            time.sleep(0.25 if elapsed < 5 else 1.0)
