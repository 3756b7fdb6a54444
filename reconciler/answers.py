"""Bounds on what a cluster sends back: every HTTP answer ftspec reads itself (the Kubernetes
transport, the Ray Jobs API) is read and parsed here, within limits.

- A body is read in chunks up to ``MAX_ANSWER_BYTES`` (a larger one is refused, never held
  whole); the whole request, headers included, has a deadline (``Deadline``: when it passes,
  the socket is shut down, so a server that drips a byte every few seconds cannot hold a
  command past it).
- JSON is parsed by ``parse_json``: numbers of at most ``MAX_NUMBER_CHARS`` characters and
  finite (a 400-digit number or ``1e999`` would overflow later arithmetic), nesting at most
  ``MAX_DEPTH`` levels (deeper answers would exhaust the recursion of every walk after it).

Each refusal is an ``AnswerRefused``: a ``BackendError`` that says what the server sent and
that retrying does not help. Our own code: the standard library's readers have per-read
timeouts only and no size or depth limits, and the bounds must hold without urllib3.
"""

from __future__ import annotations

import http.client
import json
import math
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
                         hint="the server sent far more than such an answer holds; check "
                         "the address (is it the server you meant?)")


def parse_json(raw: bytes | str, what: str) -> Any:
    """``raw`` as JSON within the bounds; None for an empty body."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        return None
    try:
        data = json.loads(text, parse_int=_int(what), parse_float=_float(what),
                          parse_constant=_constant(what))
    except RecursionError:
        raise _deep(what) from None
    except ValueError as exc:
        if isinstance(exc, AnswerRefused):
            raise
        raise AnswerRefused(f"{what}: the answer is not JSON ({exc.args[0][:120]})",
                            hint="check the address (is it the server you meant?)") from None
    _check_depth(data, what)
    return data


def error_body(raw: bytes) -> dict[str, Any]:
    """An error answer's Status object (parsed within the bounds); its text otherwise."""
    try:
        data = parse_json(raw, "an error answer") or {}
    except AnswerRefused:
        return {"message": raw[:500].decode("utf-8", "replace")}
    return data if isinstance(data, dict) else {"message": str(data)[:500]}


class _NumberRefused(AnswerRefused, ValueError):
    """Raised inside ``json.loads`` (which lets a ValueError through)."""


def _int(what: str) -> Any:
    def parse(text: str) -> int:
        if len(text) > MAX_NUMBER_CHARS:
            raise _number(what, text)
        return int(text)
    return parse


def _float(what: str) -> Any:
    def parse(text: str) -> float:
        value = float(text) if len(text) <= MAX_NUMBER_CHARS else math.inf
        if not math.isfinite(value):
            raise _number(what, text)
        return value
    return parse


def _constant(what: str) -> Any:
    def parse(text: str) -> float:
        raise _number(what, text)
    return parse


def _number(what: str, text: str) -> _NumberRefused:
    shown = text if len(text) <= 24 else f"{text[:12]}…({len(text)} characters)"
    return _NumberRefused(f"{what}: the answer holds the number {shown}, beyond what ftspec "
                          f"reads (at most {MAX_NUMBER_CHARS} characters, finite)",
                          hint="check the address (is it the server you meant?)")


def _deep(what: str) -> AnswerRefused:
    return AnswerRefused(f"{what}: the answer is nested deeper than {MAX_DEPTH} levels; not "
                         "read", hint="check the address (is it the server you meant?)")


def _check_depth(data: Any, what: str) -> None:
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            raise _deep(what)
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))
