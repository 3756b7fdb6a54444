"""A loopback HTTP server that answers as a hostile cluster would, for the bounds tests.

Each answer is a function of the request path; the server streams what it returns lazily
(a 200 MB body is never held in memory), can drip bytes slowly, and records the requests it
saw (path and headers) so a test can check what ftspec sent. It listens on 127.0.0.1 only,
on a free port, and stops when the ``with serve(...)`` block ends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Answer:
    status: int = 200
    chunks: Iterable[bytes] = ()
    length: int | None = None
    """Content-Length to announce; None sends the body until the connection closes."""
    pause_s: float = 0.0
    """Sleep before each chunk (a slow drip)."""
    content_type: str = "application/json"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)


def body(data: bytes) -> Answer:
    return Answer(chunks=[data], length=len(data))


def huge(total: int, chunk: int = 1 << 20) -> Answer:
    """``total`` bytes of a JSON string, made as they are sent."""
    def gen() -> Iterator[bytes]:
        yield b'{"logs": "'
        left = total
        while left > 0:
            n = min(chunk, left)
            yield b"x" * n
            left -= n
        yield b'"}'
    return Answer(chunks=gen(), length=total + 12)


def drip(data: bytes, every_s: float) -> Answer:
    """``data`` one byte at a time, ``every_s`` apart (Content-Length announced)."""
    return Answer(chunks=[data[i:i + 1] for i in range(len(data))], length=len(data),
                  pause_s=every_s)


class HostileServer:
    def __init__(self, answer: Callable[[Seen], Answer]) -> None:
        self.answer = answer
        self.seen: list[Seen] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                seen = Seen(self.command, self.path, dict(self.headers.items()))
                outer.seen.append(seen)
                reply = outer.answer(seen)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    if reply.length is not None:
                        self.send_header("Content-Length", str(reply.length))
                    else:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in reply.chunks:
                        if reply.pause_s:
                            time.sleep(reply.pause_s)
                            if outer.stopping.is_set():
                                return
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what the bounds are for
                self.close_connection = reply.length is None

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _any

            def log_message(self, *args: object) -> None:
                pass

        self.stopping = threading.Event()
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"

    def stop(self) -> None:
        self.stopping.set()
        self.http.shutdown()
        self.http.server_close()


@contextmanager
def serve(answer: Callable[[Seen], Answer]) -> Iterator[HostileServer]:
    """A ``HostileServer`` answering with ``answer``, stopped when the block ends."""
    server = HostileServer(answer)
    threading.Thread(target=server.http.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.stop()
