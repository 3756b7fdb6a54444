"""A forward proxy on loopback that tunnels ``CONNECT host:port`` (what kubectl and ftspec send
through ``proxy-url`` / ``HTTPS_PROXY``) and counts the tunnels it opened, per client."""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from types import TracebackType


class ConnectProxy:
    def __init__(self) -> None:
        self.tunnels: list[str] = []
        """``host:port`` of every CONNECT served, in order."""
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                line = self.rfile.readline(65536).decode("latin-1")
                while self.rfile.readline(65536) not in (b"\r\n", b"\n", b""):
                    pass  # headers
                parts = line.split()
                if len(parts) < 2 or parts[0] != "CONNECT":
                    self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
                    return
                host, _, port = parts[1].rpartition(":")
                try:
                    upstream = socket.create_connection((host.strip("[]"), int(port)), 5)
                except OSError:
                    self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
                    return
                proxy.tunnels.append(parts[1])
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self.wfile.flush()
                _pipe(self.connection, upstream)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ConnectProxy:  # noqa: PYI034 - a final class
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while True:
            ready, _, _ = select.select([a, b], [], [], 30)
            if not ready:
                return
            for src in ready:
                data = src.recv(65536)
                if not data:
                    return
                (b if src is a else a).sendall(data)
    except OSError:
        return
    finally:
        b.close()
