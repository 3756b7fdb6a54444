"""Bounds on what a cluster sends back: every HTTP answer ftspec reads itself (the Kubernetes
transport, the Ray Jobs API) is read and parsed here, within limits.

- A body is read in chunks up to ``MAX_ANSWER_BYTES`` (a larger one is refused, never held
  whole); the whole request, headers included, has a deadline (``Deadline``: when it passes,
  the socket is shut down, so a server that drips a byte every few seconds cannot hold a
  command past it).
- JSON is parsed by ``parse_json`` through ``spec.jsonlimits`` (the one parser of untrusted
  JSON, saved plans' too): numbers of at most ``MAX_NUMBER_CHARS`` characters and finite (a
  400-digit number or ``1e999`` would overflow later arithmetic), nesting at most
  ``MAX_DEPTH`` levels (deeper answers would exhaust the recursion of every walk after it).

Each refusal is an ``AnswerRefused``: a ``BackendError`` that says what the server sent and
that retrying does not help. Our own code: the standard library's readers have per-read
timeouts only and no size or depth limits, and the bounds must hold without urllib3.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from typing import Any

from ftspec.reconciler.backend import BackendError

MAX_ANSWER_BYTES = 64 << 20
"""The largest body read from a server (a LIST of many objects, a long job log)."""
MAX_DEPTH = 100
"""JSON nesting levels (Kubernetes objects and CRD schemas stay far below)."""
MAX_NUMBER_CHARS = 32
"""Characters in one JSON number (an int64 has 19 digits, a float ~24 characters)."""
_CHECK = "check the address (is it the server you meant?)"
_CHUNK = 1 << 16


class AnswerRefused(BackendError):
    """A server's answer over ftspec's bounds (size, time, depth, numbers)."""


class Deadline:
    """The time a request may take, all of it: ``arm(sock)`` shuts the socket down when
    the time is up (a read blocked in it returns at once), ``expired`` says it happened."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.expired = False
        self._timer: threading.Timer | None = None

    def left(self) -> float:
        return self.ends - time.monotonic()

    def arm(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        self._timer = threading.Timer(max(self.left(), 0.0), self._expire, (sock,))
        self._timer.daemon = True
        self._timer.start()

    def _expire(self, sock: socket.socket) -> None:
        self.expired = True
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def check(self, what: str) -> None:
        if self.expired or self.left() <= 0:
            raise AnswerRefused(
                f"{what} did not finish within {self.seconds:g} s (the server sent its answer "
                "too slowly)", hint="the server is overloaded or not what it claims to be; "
                "check the address, then run the command again", retryable=True)


def read_body(resp: http.client.HTTPResponse, what: str, deadline: Deadline | None = None,
              limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The whole body of ``resp``, refused once past ``limit`` bytes or the deadline."""
    announced = resp.getheader("Content-Length")
    if announced is not None and announced.strip().isdigit() and int(announced) > limit:
        raise too_large(what, limit)
    parts: list[bytes] = []
    size = 0
    while True:
        if deadline is not None:
            deadline.check(what)
        try:
            chunk = resp.read(_CHUNK)
        except (OSError, http.client.HTTPException):
            if deadline is not None:
                deadline.check(what)
            raise
        if not chunk:
            if deadline is not None and deadline.expired:
                deadline.check(what)
            return b"".join(parts)
        size += len(chunk)
        if size > limit:
            raise too_large(what, limit)
        parts.append(chunk)


def too_large(what: str, limit: int) -> AnswerRefused:
    return AnswerRefused(f"{what}: the answer is larger than {limit >> 20} MiB; not read",
                         hint=f"the server sent far more than such an answer holds; {_CHECK}")


def parse_json(raw: bytes | str, what: str) -> Any:
    """``raw`` as JSON within the bounds (``spec.jsonlimits``, the one parser of untrusted
    JSON); None for an empty body."""
    from ftspec.spec.jsonlimits import JsonLimitError, loads_limited

    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        return None
    try:
        return loads_limited(text, max_depth=MAX_DEPTH, max_digits=MAX_NUMBER_CHARS)
    except JsonLimitError as exc:
        raise AnswerRefused(f"{what}: the answer holds {exc.message} at line {exc.line} "
                            f"column {exc.col}; not read", hint=_CHECK) from None
    except (ValueError, RecursionError) as exc:
        reason = str(exc.args[0] if exc.args else exc)[:120]
        raise AnswerRefused(f"{what}: the answer is not JSON ftspec reads ({reason})",
                            hint=_CHECK) from None


def error_body(raw: bytes) -> dict[str, Any]:
    """An error answer's Status object (parsed within the bounds); its text otherwise."""
    try:
        data = parse_json(raw, "an error answer") or {}
    except AnswerRefused:
        return {"message": raw[:500].decode("utf-8", "replace")}
    return data if isinstance(data, dict) else {"message": str(data)[:500]}
