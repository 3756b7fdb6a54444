"""The pod's own service account, when ftspec runs in a pod without a kubeconfig (a CI job,
a controller): ``KUBERNETES_SERVICE_HOST`` / ``_PORT`` give the server, the mounted token,
CA and namespace files the rest, as client-go's ``InClusterConfig`` reads them. The token
file is read on each start, never cached. ``FTSPEC_SERVICEACCOUNT_DIR`` moves the mount
point (tests; the default is the one Kubernetes uses)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError

MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def in_cluster(materialize: Callable[..., str | None]) -> Any:
    """A ``Connection`` for the pod's service account, or None when not in a pod."""
    from ftspec.reconciler.kubernetes.kubeconfig import (
        MAX_TOKEN_FILE_BYTES,
        Connection,
        _read,
        header_value,
    )
    from ftspec.reconciler.kubernetes.proxy import proxy_for

    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        return None
    mount = Path(os.environ.get("FTSPEC_SERVICEACCOUNT_DIR") or MOUNT)
    token_file = mount / "token"
    if not token_file.is_file():
        raise BackendError(f"running in a pod (KUBERNETES_SERVICE_HOST is set) but no "
                           f"service-account token at {token_file}",
                           hint="mount the service account token, or pass --kubeconfig")
    token = header_value(_read(token_file, MAX_TOKEN_FILE_BYTES, "service-account token"),
                         f"service-account token {token_file}")
    namespace_file = mount / "namespace"
    namespace = _read(namespace_file, 4096, "namespace file").strip() \
        if namespace_file.is_file() else None
    literal = f"[{host}]" if ":" in host else host
    server = f"https://{literal}:{port}"
    ca = mount / "ca.crt"
    return Connection(server=server, context="in-cluster", namespace=namespace or None,
                      token=token,
                      ca_file=materialize(None, str(ca), mount, ".crt", "ca.crt")
                      if ca.is_file() else None,
                      user_name="service-account", proxy_url=proxy_for(server))
