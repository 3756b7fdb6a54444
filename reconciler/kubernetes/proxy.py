"""Which HTTP proxy carries the requests to an API server, as client-go decides it.

The cluster's ``proxy-url`` wins; else the environment's ``HTTPS_PROXY`` (``HTTP_PROXY`` for an
``http://`` server), lower-case names too, unless ``NO_PROXY`` excludes the host (a name, a
``.domain`` or ``domain`` suffix, an IP, a CIDR, ``*``; an optional ``:port``). As in Go's
``httpproxy``, ``localhost`` and loopback addresses are never sent to an environment proxy.
Requests reach the server through the proxy by ``CONNECT`` (``pool.py``).
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

from ftspec.reconciler.backend import BackendError
from ftspec.spec.urls import is_uri


def _env(*names: str) -> str:
    for name in names:
        value = os.environ.get(name) or os.environ.get(name.lower())
        if value:
            return value
    return ""


def _excluded(host: str, port: int, no_proxy: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if host == "localhost" or (address is not None and address.is_loopback):
        return True
    for raw in (p.strip().lower() for p in no_proxy.split(",")):
        if not raw:
            continue
        if raw == "*":
            return True
        entry, _, entry_port = raw.rpartition(":") if raw.count(":") == 1 else (raw, "", "")
        if entry_port and entry_port != str(port):
            continue
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        name = entry.lstrip("*").lstrip(".")
        if host == name or host.endswith("." + name):
            return True
    return False


def proxy_for(server: str, proxy_url: object = None) -> str | None:
    """The proxy URL for ``server`` (None: connect directly)."""
    if proxy_url:
        chosen = str(proxy_url)
    else:
        parts = urlsplit(server)
        chosen = _env("HTTPS_PROXY") if parts.scheme == "https" else _env("HTTP_PROXY")
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if not chosen or _excluded(host, port, _env("NO_PROXY")):
            return None
    if not is_uri(chosen):
        chosen = "http://" + chosen
    scheme = urlsplit(chosen).scheme
    if scheme != "http":
        raise BackendError(f"proxy {scheme}:// is not supported (only http:// proxies that "
                           "tunnel with CONNECT)", hint="check proxy-url / HTTPS_PROXY")
    return chosen
