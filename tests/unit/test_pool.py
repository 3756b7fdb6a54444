"""The API server connection pool (``reconciler/kubernetes/pool.py``) against a real local
HTTP/1.1 server: keep-alive reuse, connections the server closed, ``Connection: close``.
TLS with a CA and client certificates is exercised against the real kube-apiserver by the
integration tests (``tests/integration/test_kube_auth.py``)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ftspec.reconciler.kubernetes.pool import ConnectionPool, tls_context


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    clients: list[tuple[str, int]]
    mode: str
    hung_up: threading.Event

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
        super().shutdown_request(request)
        self.hung_up.set()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self._answer(b"")

    def do_PATCH(self) -> None:
        self._answer(self.rfile.read(int(self.headers["Content-Length"])))

    def _answer(self, received: bytes) -> None:
        self.server.clients.append(self.client_address)
        body = (f"{self.command} {self.path} {self.headers.get('X-Test')} ".encode()
                + received)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if self.server.mode == "close-header":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        if self.server.mode == "hang-up":  # closes after answering, saying nothing
            self.wfile.flush()
            self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.clients, srv.mode, srv.hung_up = [], "keep-alive", threading.Event()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _url(srv: _Server, path: str) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}{path}"


def _pool() -> ConnectionPool:
    return ConnectionPool(tls_context(None, None, None, insecure=False))


def test_requests_share_one_kept_alive_connection(server: _Server) -> None:
    pool = _pool()
    first = pool.request("GET", _url(server, "/a?x=1&y=2"), None, {"X-Test": "h"}, 5.0)
    second = pool.request("PATCH", _url(server, "/b"), b'{"k": 1}', {}, 5.0)
    assert first == (200, b"GET /a?x=1&y=2 h ", None)  # no Retry-After
    assert second == (200, b'PATCH /b None {"k": 1}', None)
    assert len(server.clients) == 2 and len(set(server.clients)) == 1
    pool.close()


def test_a_connection_the_server_closed_is_replaced_before_use(server: _Server) -> None:
    server.mode = "hang-up"
    pool = _pool()
    assert pool.request("GET", _url(server, "/1"), None, {}, 5.0)[0] == 200
    assert server.hung_up.wait(10)  # the server closed the connection after answering
    assert pool.request("GET", _url(server, "/2"), None, {}, 5.0) == (200, b"GET /2 None ", None)
    assert len(set(server.clients)) == 2
    pool.close()


def test_a_response_that_says_close_is_not_kept(server: _Server) -> None:
    server.mode = "close-header"
    pool = _pool()
    for path in ("/1", "/2"):
        assert pool.request("GET", _url(server, path), None, {}, 5.0)[0] == 200
    assert len(set(server.clients)) == 2
    pool.close()


def test_threads_get_connections_of_their_own(server: _Server) -> None:
    pool = _pool()
    results: list[tuple[int, bytes, str | None]] = []

    def work(i: int) -> None:
        results.append(pool.request("GET", _url(server, f"/{i}"), None, {}, 5.0))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == sorted((200, f"GET /{i} None ".encode(), None) for i in range(8))
    pool.close()


def test_an_unreachable_server_raises_os_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(OSError):
        _pool().request("GET", f"http://127.0.0.1:{port}/", None, {}, 5.0)
