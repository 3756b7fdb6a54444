"""A tiny stdlib HTTPS client for the test API server (no dependency on the ``kubernetes`` package)."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class KubeApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.body = body
        try:
            message = str(json.loads(body).get("message", body))
        except ValueError:
            message = body
        super().__init__(f"{method} {path} -> HTTP {status}: {message[:2000]}")


class KubeApi:
    """JSON requests against ``server`` with a bearer token, verifying TLS with ``ca_file``."""

    def __init__(self, server: str, token: str, ca_file: Path) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self._ssl = ssl.create_default_context(cafile=str(ca_file))

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = JSON,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        """Send a request; return the decoded JSON body (``{"text": ...}`` for non-JSON answers).

        Raises ``KubeApiError`` on HTTP >= 400; connection errors propagate as ``URLError``/``OSError``."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", JSON)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=timeout) as resp:
                raw = resp.read()
                content_type = resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as err:
            raise KubeApiError(method, path, err.code, err.read().decode(errors="replace")) from None
        if not raw:
            return {}
        if not content_type.startswith(JSON):  # e.g. /readyz answers text/plain "ok"
            return {"text": raw.decode(errors="replace")}
        decoded = json.loads(raw)
        return decoded if isinstance(decoded, dict) else {"items": decoded}

    def get(self, path: str) -> dict[str, Any]:
        return self.request("GET", path)

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
        except KubeApiError as err:
            if err.status == 404:
                return False
            raise
        return True

    def wait_gone(self, path: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.exists(path):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} still exists after {timeout:.0f} s")
            time.sleep(0.1)
