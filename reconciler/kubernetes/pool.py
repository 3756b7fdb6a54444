"""Keep-alive HTTP(S) connections to the API server, on the standard library's http.client.

Why our own: the transport needs only JSON requests and whole responses over TLS with a CA
and client certificates, and urllib3 (the usual choice) costs ~45 ms to import here, a
tenth of a whole 50-spec ``ftspec plan`` (``bench/plan.py``). What it would have given us
is kept: one TLS context for the run, idle connections reused across threads (at most
``MAX_IDLE`` per server), a connection the server closed while idle is noticed before use
and replaced, and a separate connect timeout. No redirects are followed and nothing is
retried here; ``Transport`` decides about retries. Answers are read within the bounds of
``reconciler/answers.py`` (size, a deadline for the whole request).
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
from urllib.parse import urlsplit

from ftspec.reconciler.answers import Deadline, read_body

CONNECT_TIMEOUT_S = 5.0
DEADLINE_FACTOR = 4.0
"""A request's whole deadline, in per-operation timeouts (a server that drips its answer
keeps each read under the timeout; the deadline still ends the request)."""
MAX_IDLE = 16
"""Idle connections kept per server (the plan's reads run on up to 8 threads)."""


def tls_context(ca_file: str | None, cert_file: str | None, key_file: str | None,
                insecure: bool) -> ssl.SSLContext:
    """Verify the server against ``ca_file`` (else the system's CAs) and its name, unless
    ``insecure`` (kubeconfig's ``insecure-skip-tls-verify``); present the client
    certificate when there is one."""
    context = ssl.create_default_context(cafile=None if insecure else ca_file)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


class _HTTPSConnection(http.client.HTTPSConnection):
    """HTTPS with the TLS name to verify set apart from the host connected to (kubeconfig's
    ``tls-server-name``; through a proxy, the tunnelled server's name)."""

    def __init__(self, host: str, port: int, *, timeout: float, context: ssl.SSLContext,
                 server_name: str | None) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._server_name = server_name
        self._tls_context = context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # TCP, and CONNECT through a proxy
        name = self._server_name or getattr(self, "_tunnel_host", None) or self.host
        self.sock = self._tls_context.wrap_socket(self.sock, server_hostname=name)


class ConnectionPool:
    def __init__(self, tls: ssl.SSLContext, *, proxy_url: str | None = None,
                 server_name: str | None = None) -> None:
        """``proxy_url``: an http:// proxy to tunnel through (CONNECT); ``server_name``: the
        name the server's certificate must carry when it is not the URL's host."""
        self._tls = tls
        self._proxy = urlsplit(proxy_url) if proxy_url else None
        self._server_name = server_name
        self._idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def request(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
                timeout: float, repeated: list[tuple[str, str]] | None = None,
                deadline_s: float | None = None) -> tuple[int, bytes, str | None]:
        """Send one request; the status, the whole body and the ``Retry-After`` header (a
        429 or 503 says when to come back). ``repeated``: headers that may
        appear more than once (``Impersonate-Group``). ``timeout`` bounds each socket
        operation, ``deadline_s`` (default ``DEADLINE_FACTOR`` × ``timeout``) the whole
        request; the body is read within ``answers.MAX_ANSWER_BYTES``
        (``answers.AnswerRefused`` past either). Socket, TLS and HTTP errors propagate
        (``OSError``, ``http.client.HTTPException``)."""
        parts = urlsplit(url)
        scheme = parts.scheme
        host = parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        key = (scheme, host, port)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        deadline = Deadline(deadline_s if deadline_s is not None else timeout * DEADLINE_FACTOR)
        conn = self._take(key)
        if conn is None:
            conn = self._connect(key)
        try:
            assert conn.sock is not None
            conn.sock.settimeout(timeout)
            deadline.arm(conn.sock)
            if repeated:
                conn.putrequest(method, target, skip_accept_encoding=True)
                for name, value in [*headers.items(), *repeated]:
                    conn.putheader(name, value)
                if body is not None:
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body)
            else:
                conn.request(method, target, body=body, headers=headers)
            what = f"{method} {parts.path or '/'}"
            try:
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException):
                deadline.check(what)
                raise
            data = read_body(resp, what, deadline)
            retry_after = resp.getheader("Retry-After")
        except BaseException:
            conn.close()
            raise
        finally:
            deadline.disarm()
        if resp.will_close or deadline.expired:
            conn.close()
        else:
            self._give(key, conn)
        return resp.status, data, retry_after

    def _connect(self, key: tuple[str, str, int]) -> http.client.HTTPConnection:
        scheme, host, port = key
        conn: http.client.HTTPConnection
        at_host, at_port = host, port
        if self._proxy is not None:
            at_host, at_port = self._proxy.hostname or "", self._proxy.port or 80
        if scheme == "https":
            conn = _HTTPSConnection(at_host, at_port, timeout=CONNECT_TIMEOUT_S,
                                    context=self._tls, server_name=self._server_name)
        else:
            conn = http.client.HTTPConnection(at_host, at_port, timeout=CONNECT_TIMEOUT_S)
        if self._proxy is not None:
            conn.set_tunnel(host, port)
        conn.connect()
        return conn

    def _take(self, key: tuple[str, str, int]) -> http.client.HTTPConnection | None:
        while True:
            with self._lock:
                idle = self._idle.get(key)
                conn = idle.pop() if idle else None
            if conn is None:
                return None
            if conn.sock is not None and not _dropped(conn.sock):
                return conn
            conn.close()

    def _give(self, key: tuple[str, str, int], conn: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < MAX_IDLE:
                idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for conn in conns:
            conn.close()


def _dropped(sock: socket.socket) -> bool:
    """An idle connection is readable only when the server closed it (or broke protocol)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)
