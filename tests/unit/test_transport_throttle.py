"""The transport under a throttling server: a 429 is retried after the server's Retry-After
(bounded), more often than other transient errors (the server is busy, not broken), counted,
and narrows the window of requests in flight; a server that keeps refusing is reported once
the retries run out."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ftspec.reconciler.kubernetes import transport as tr
from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.kubeconfig import Connection


class _Server:
    def __init__(self, answers: list[tuple[int, str | None]]) -> None:
        self.answers = answers
        self.seen = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, after = outer.answers[min(outer.seen, len(outer.answers) - 1)]
                outer.seen += 1
                body = b'{"kind": "Status", "message": "too many requests"}' if status >= 400 \
                    else b'{"kind": "NamespaceList"}'
                self.send_response(status)
                if after is not None:
                    self.send_header("Retry-After", after)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    slept: list[float] = []
    monkeypatch.setattr(tr.time, "sleep", slept.append)
    yield slept


def _transport(server: _Server, retries: int = 2) -> tr.Transport:
    return tr.Transport(Connection(server=server.url, context="t", namespace=None),
                        retries=retries)


def test_retry_after_is_honoured_and_counted(waits: list[float]) -> None:
    server = _Server([(429, "3"), (429, "1"), (429, "120"), (200, None)])
    t = _transport(server)  # 2 retries for errors, but a 429 gets THROTTLE_RETRIES
    assert t.request("GET", "/api/v1/namespaces") == {"kind": "NamespaceList"}
    assert waits == [3.0, 1.0, tr.MAX_RETRY_AFTER_S]
    assert (t.throttled, t.retried, t.round_trips) == (3, 3, 4)
    # each 429 halved the window of requests in flight (8 -> 1); the success widened it by one
    assert t._window.limit == 2
    server.http.shutdown()


def test_without_retry_after_the_backoff_applies(waits: list[float]) -> None:
    server = _Server([(429, None), (429, "soon"), (200, None)])
    t = _transport(server)
    t.request("GET", "/x")
    assert waits == [0.25, 0.5]
    server.http.shutdown()


def test_a_server_that_keeps_refusing_is_reported(waits: list[float]) -> None:
    server = _Server([(429, "1")])
    t = _transport(server)
    with pytest.raises(ApiError) as raised:
        t.request("GET", "/x")
    assert raised.value.status == 429 and raised.value.retryable
    assert t.throttled == tr.THROTTLE_RETRIES and server.seen == tr.THROTTLE_RETRIES + 1
    server.http.shutdown()
