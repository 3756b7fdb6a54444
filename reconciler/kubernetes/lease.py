"""A coordination.k8s.io Lease per spec, so two applies of one spec cannot interleave."""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import uuid
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.resources import KINDS
from ftspec.reconciler.kubernetes.transport import Transport

LEASE_SECONDS = int(os.environ.get("FTSPEC_LEASE_SECONDS", "120"))
_PROCESS = f"{socket.gethostname()}/pid-{os.getpid()}"
_ACTIVE: set[str] = set()
"""Holder identities of leases this process holds right now."""


def lease_name(spec_id: str) -> str:
    return ("ftspec-" + re.sub(r"[^a-z0-9.-]+", "-", spec_id.lower())).strip("-.")[:63]


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _expired(lease: dict[str, Any]) -> bool:
    spec = lease.get("spec") or {}
    renew = spec.get("renewTime") or spec.get("acquireTime")
    if not renew:
        return True
    when = dt.datetime.strptime(renew.replace("Z", ""), "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=dt.timezone.utc)
    age = (dt.datetime.now(dt.timezone.utc) - when).total_seconds()
    return age > int(spec.get("leaseDurationSeconds") or LEASE_SECONDS)


def _abandoned(holder: str) -> bool:
    """Held by this process but by no apply still running (e.g. a crash mid-apply)."""
    return holder.startswith(_PROCESS + "/") and holder not in _ACTIVE


class SpecLease:
    def __init__(self, transport: Transport, namespace: str, spec_id: str) -> None:
        self.t = transport
        self.namespace = namespace
        self.spec_id = spec_id
        self.name = lease_name(spec_id)
        self.holder = f"{_PROCESS}/{uuid.uuid4().hex[:8]}"
        self._path = KINDS["Lease"].path(namespace, self.name)

    def _body(self, rv: str | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace,
                                "labels": {"app.kubernetes.io/managed-by": "ftspec"}}
        if rv:
            meta["resourceVersion"] = rv
        now = _now()
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                "spec": {"holderIdentity": self.holder, "leaseDurationSeconds": LEASE_SECONDS,
                         "acquireTime": now, "renewTime": now}}

    def acquire(self) -> None:
        what = f"lease {self.namespace}/{self.name}"
        try:
            self.t.request("POST", KINDS["Lease"].path(self.namespace), self._body(),
                           verb="create", what=what)
            _ACTIVE.add(self.holder)
            return
        except ApiError as exc:
            if exc.status != 409:
                raise
        current = self.t.request("GET", self._path, verb="get", what=what) or {}
        holder = str((current.get("spec") or {}).get("holderIdentity") or "")
        if not (_expired(current) or _abandoned(holder)):
            since = (current.get("spec") or {}).get("acquireTime", "?")
            raise BackendError(
                f"another `ftspec apply` of spec {self.spec_id!r} is in progress "
                f"(lock {what} held by {holder} since {since})",
                hint=f"wait for it to finish; if it crashed, the lock expires after "
                f"{LEASE_SECONDS} s (or delete the Lease {what})", retryable=True)
        rv = (current.get("metadata") or {}).get("resourceVersion")
        try:
            self.t.request("PUT", self._path, self._body(rv), verb="update", what=what)
        except ApiError as exc:
            if exc.status == 409:
                raise BackendError(f"another `ftspec apply` of spec {self.spec_id!r} took the "
                                   f"lock {what} first", retryable=True) from None
            raise
        _ACTIVE.add(self.holder)

    def release(self) -> None:
        _ACTIVE.discard(self.holder)
        try:
            self.t.request("DELETE", self._path, verb="delete", ok_404=True,
                           what=f"lease {self.namespace}/{self.name}")
        except BackendError:
            pass  # expires on its own; the next apply of this process can take it over
