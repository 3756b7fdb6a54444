"""One HTTP client for the whole run: JSON requests with retry and backoff.

The default transport is a keep-alive pool on the standard library (``pool.py``) with the
kubeconfig read by ``kubeconfig.py``: importing the official ``kubernetes`` package costs
1-2 s here, more than a whole plan. Kubeconfigs with ``exec``/``auth-provider`` users (or
``FTSPEC_KUBE_CLIENT=official``) go through the official client's ApiClient instead.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from ftspec.reconciler.answers import AnswerRefused, error_body, parse_json
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes.errors import ApiError, api_error, unreachable
from ftspec.reconciler.kubernetes.kubeconfig import Connection
from ftspec.reconciler.kubernetes.shapes import shaped
from ftspec.spec.secrets import redact

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON = "application/json"

Sender = Callable[[str, str, "bytes | None", dict[str, str], float],
                  "tuple[int, bytes, str | None]"]
MAX_RETRY_AFTER_S = 30.0
"""The longest ``Retry-After`` obeyed; a longer one waits this long."""
THROTTLE_RETRIES = 30
"""Retries of one request answered 429 (the server asks to come back later)."""
MAX_IN_FLIGHT = 8
"""Requests in flight at once; a 429 halves the window (down to 1), successes widen it
again one by one (``_Window``): a throttling server is not hammered by retries."""


class _Window:
    """How many requests may be in flight: additive increase, multiplicative decrease."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.limit = most
        self.busy = 0
        self._cond = threading.Condition()
        self._good = 0

    def __enter__(self) -> None:
        with self._cond:
            while self.busy >= self.limit:
                self._cond.wait()
            self.busy += 1

    def __exit__(self, *_exc: object) -> None:
        with self._cond:
            self.busy -= 1
            self._cond.notify_all()

    def throttled(self) -> None:
        with self._cond:
            self.limit, self._good = max(1, self.limit // 2), 0

    def succeeded(self) -> None:
        with self._cond:
            self._good += 1
            if self.limit < self.most and self._good >= self.limit:
                self.limit, self._good = self.limit + 1, 0
                self._cond.notify_all()


class _PoolSender:
    def __init__(self, conn: Connection) -> None:
        from ftspec.reconciler.kubernetes.pool import ConnectionPool, tls_context

        self._pool = ConnectionPool(tls_context(conn.ca_file, conn.cert_file, conn.key_file,
                                                conn.insecure),
                                    proxy_url=conn.proxy_url, server_name=conn.tls_server_name)
        self._auth = {"Authorization": f"Bearer {conn.token}"} if conn.token else {}
        self._as: list[tuple[str, str]] = []
        if conn.impersonate_user:
            self._as = [("Impersonate-User", conn.impersonate_user)]
            self._as += [("Impersonate-Group", g) for g in conn.impersonate_groups]

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
                 timeout: float) -> tuple[int, bytes, str | None]:
        return self._pool.request(method, url, body, {**self._auth, **headers}, timeout,
                                  self._as)


class _OfficialSender:
    """``exec`` / ``auth-provider`` users: the official client works out the credentials
    (runs the plugin, refreshes an expiring token before each request); the request itself
    goes through the same pool as any other, so the client's REST layer (whose
    signatures change between releases) is never called."""

    def __init__(self, conn: Connection) -> None:
        from dataclasses import replace

        from kubernetes import client, config  # heavy: only for exec/auth-provider users

        self._config = client.Configuration()
        try:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                # every KUBECONFIG file: the client's own merger reads them as kubectl does
                config_file=os.pathsep.join(conn.config_files) if conn.config_files else None,
                context=conn.context, client_configuration=self._config,
                persist_config=False)
        except Exception as exc:  # noqa: BLE001 - the client raises anything on bad input
            # never str(exc): the client's messages may quote the kubeconfig's secrets
            raise BackendError(
                f"kubeconfig user of context {conn.context!r} cannot be used "
                f"({type(exc).__name__} from the kubernetes client's exec/auth-provider "
                "support)", hint="check the user's exec / auth-provider entry") from None
        cfg = self._config
        self._pool = _PoolSender(replace(
            conn, token=None, ca_file=conn.ca_file or cfg.ssl_ca_cert,
            cert_file=conn.cert_file or cfg.cert_file, key_file=conn.key_file or cfg.key_file))

    def __call__(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
                 timeout: float) -> tuple[int, bytes, str | None]:
        auth = self._config.get_api_key_with_prefix(  # refreshes an expiring token first
            "BearerToken", alias="authorization")  # (older clients used "authorization")
        return self._pool(method, url, body, {**headers, "Authorization": auth} if auth
                          else headers, timeout)


class Transport:
    """JSON over HTTP to one API server; transient failures retried with backoff."""

    def __init__(self, conn: Connection, *, retries: int | None = None,
                 timeout: float = 30.0) -> None:
        self.conn = conn
        self.retries = int(os.environ.get("FTSPEC_KUBE_RETRIES", "5")) if retries is None \
            else retries
        self.timeout = timeout
        self.round_trips = 0
        self.throttled = 0
        """429 answers met (each retried after the server's Retry-After)."""
        self.retried = 0
        """Requests sent again (429, 5xx, connection errors)."""
        self._lock = threading.Lock()
        self._window = _Window(MAX_IN_FLIGHT)
        if os.environ.get("FTSPEC_KUBE_STATS"):
            import atexit

            atexit.register(self._write_stats, os.environ["FTSPEC_KUBE_STATS"])
        official = os.environ.get("FTSPEC_KUBE_CLIENT") == "official" or conn.needs_official_client
        self._send: Sender = _OfficialSender(conn) if official else _PoolSender(conn)
        self.client_name = "kubernetes" if official else "http.client"

    def request(self, method: str, path: str, body: Any = None, *,
                query: Mapping[str, str] | None = None, content_type: str = JSON,
                what: str = "", verb: str = "", ok_404: bool = False, accept: str = JSON
                ) -> dict[str, Any] | None:
        data = self.raw(method, path, body, query=query, content_type=content_type, what=what,
                        verb=verb, ok_404=ok_404, accept=accept)
        if data is None:
            return None
        answer = parse_json(data, f"the API server's answer to {method} {path}")
        if answer is None:
            return {}
        if not isinstance(answer, dict):
            raise AnswerRefused(f"the API server's answer to {method} {path} is not a JSON "
                                "object", hint="check --kubeconfig / --context (is it the "
                                "API server you meant?)")
        return shaped(answer, f"the API server's answer to {method} {path}")

    def request_text(self, method: str, path: str, *, query: Mapping[str, str] | None = None,
                     what: str = "") -> str:
        # JSON accepted too: an error comes back as a Status object, which the server can
        # only send as JSON (text/plain alone turns every error into a bare 406)
        try:
            data = self.raw(method, path, query=query, what=what,
                            accept="text/plain, application/json;q=0.9")
        except AnswerRefused as exc:
            if "larger than" in str(exc):
                raise AnswerRefused(f"{what or path}: {exc}", hint="a log this long is read "
                                    "from its end: `ftspec logs --tail N`") from None
            raise
        return (data or b"").decode("utf-8", "replace")

    def raw(self, method: str, path: str, body: Any = None, *,
            query: Mapping[str, str] | None = None, content_type: str = JSON,
            what: str = "", verb: str = "", ok_404: bool = False, accept: str = JSON
            ) -> bytes | None:
        url = self.conn.server + path + ("?" + urlencode(query) if query else "")
        raw = None if body is None else (body if isinstance(body, bytes)
                                         else json.dumps(body).encode())
        headers = {"Accept": accept}
        if raw is not None:
            headers["Content-Type"] = content_type
        delay = 0.25
        attempt = throttles = 0
        while True:
            wait: float | None = None
            try:
                with self._lock:
                    self.round_trips += 1
                with self._window:
                    status, data, retry_after = self._send(method, url, raw, headers,
                                                           self.timeout)
            except AnswerRefused:
                raise  # over the bounds: the same answer would come again
            except Exception as exc:  # noqa: BLE001 - http/ssl/socket errors alike
                err: BackendError = unreachable(self.conn.server, _reason(exc))
            else:
                if status < 400:
                    self._window.succeeded()
                    return data
                if status == 404 and ok_404:
                    return None
                err = api_error(status, error_body(data), verb=verb or method,
                                what=what or path, server=self.conn.server,
                                context=self.conn.context)
                wait = _seconds(retry_after) if status in (429, 503) else None
            if status_of(err) == 429:
                if throttles >= max(self.retries, THROTTLE_RETRIES):
                    raise err
                throttles += 1  # the server is busy, not broken: come back when it says
                self._window.throttled()
                with self._lock:
                    self.throttled += 1
            elif not err.retryable or attempt >= self.retries or status_of(err) == 409:
                raise err
            else:
                attempt += 1
            with self._lock:
                self.retried += 1
            time.sleep(wait if wait is not None else delay)
            delay = min(delay * 2, 4.0)

    def _write_stats(self, path: str) -> None:
        """One JSON line of counters appended to ``FTSPEC_KUBE_STATS`` (benchmarks)."""
        line = json.dumps({"requests": self.round_trips, "throttled": self.throttled,
                           "retries": self.retried})
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        except OSError:
            pass


def status_of(err: BackendError) -> int | None:
    return err.status if isinstance(err, ApiError) else None


def _seconds(retry_after: str | None) -> float | None:
    """``Retry-After: 3`` -> 3.0 (bounded); an HTTP date or junk -> None (use the backoff)."""
    if not retry_after:
        return None
    try:
        return min(max(float(retry_after.strip()), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        return None


def _reason(exc: Exception) -> str:
    """The words of a request's failure, credentials redacted before the text is cut (a
    header ``http.client`` refuses comes back quoted whole in its message)."""
    text = str(exc)
    if isinstance(exc, ValueError) and "header" in text.lower():
        return "a request header holds characters HTTP does not allow (its value is not shown)"
    if "Connection refused" in text or "NewConnectionError" in text:
        return "connection refused"
    if "timed out" in text.lower() or "Timeout" in type(exc).__name__:
        return "timed out"
    return f"{type(exc).__name__}: {redact(text)[:200]}"
