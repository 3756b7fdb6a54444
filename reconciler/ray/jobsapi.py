"""A small client for the Ray Jobs REST API (the dashboard's ``/api/jobs/``).

Plain HTTP on the standard library, through the same keep-alive pool and bounds as the
Kubernetes transport (``kubernetes/pool.py``: answers within ``reconciler/answers.py``'s size,
deadline, depth and number limits; the proxy chosen as client-go chooses it): ``import ray``
costs seconds and is only needed when a submission must upload a local ``working_dir`` /
``py_modules`` package, where Ray's own ``JobSubmissionClient`` does the upload. Connection
failures become ``BackendError``s that say a retry can help; nothing is changed on the
cluster by a failed call.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.parse
from typing import TYPE_CHECKING, Any

from ftspec.reconciler.answers import AnswerRefused, parse_json
from ftspec.reconciler.backend import BackendError
from ftspec.spec.secrets import redact
from ftspec.spec.urls import is_uri, scheme, url_problem

if TYPE_CHECKING:
    from ftspec.reconciler.kubernetes.pool import ConnectionPool

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
SUBMIT_KEYS = ("entrypoint", "submission_id", "runtime_env", "metadata", "entrypoint_num_cpus",
               "entrypoint_num_gpus", "entrypoint_memory", "entrypoint_resources")
_RETRIES = 3


def resolve_address(configured: str | None) -> str:
    """``deploy.ray.address``, else ``RAY_ADDRESS``, as an http(s) URL of the Jobs API."""
    address = configured or os.environ.get("RAY_ADDRESS")
    if not address:
        raise BackendError(
            "no Ray Jobs API address: deploy.ray.address is not set and RAY_ADDRESS is empty",
            hint="set deploy.ray.address (e.g. --set deploy.ray.address=http://127.0.0.1:8265) "
            "or export RAY_ADDRESS")
    if scheme(address) == "ray" or address == "auto":
        raise BackendError(
            f"{address!r} is a Ray client/GCS address, not the Jobs API",
            hint="use the dashboard URL, e.g. http://127.0.0.1:8265")
    if not is_uri(address):
        address = "http://" + address
    problem = url_problem(address)
    if problem is not None:
        raise BackendError(f"not a usable Ray Jobs API address: {problem}",
                           hint="the dashboard URL, e.g. http://127.0.0.1:8265")
    return address.rstrip("/")


class JobsApi:
    def __init__(self, address: str, timeout_s: float = 10.0) -> None:
        self.address = address
        self.timeout_s = timeout_s
        """Each socket operation; the whole request has ``pool.DEADLINE_FACTOR`` times it."""
        self._pool: ConnectionPool | None = None

    def _connections(self) -> ConnectionPool:
        if self._pool is None:
            from ftspec.reconciler.kubernetes.pool import ConnectionPool, tls_context
            from ftspec.reconciler.kubernetes.proxy import proxy_for

            self._pool = ConnectionPool(tls_context(None, None, None, False),
                                        proxy_url=proxy_for(self.address))
        return self._pool

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None,
              ok_404: bool = False) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        last: Exception | None = None
        for attempt in range(_RETRIES if method == "GET" else 1):
            try:
                status, raw, _ = self._connections().request(
                    method, self.address + path, data, headers, self.timeout_s)
            except AnswerRefused:
                raise  # over the bounds: the same answer would come again
            except (OSError, http.client.HTTPException) as exc:
                last = exc
                time.sleep(0.5 * (attempt + 1))
                continue
            if status == 404 and ok_404:
                return None
            if status >= 400:
                detail = raw[:2000].decode("utf-8", errors="replace").strip()
                raise BackendError(
                    f"Ray Jobs API {method} {path} failed: HTTP {status}: {detail[:500]}",
                    retryable=status >= 500)
            return parse_json(raw, f"the Ray Jobs API's answer to {method} {path}")
        reason = str(last) or type(last).__name__
        raise BackendError(
            f"cannot reach the Ray Jobs API at {self.address}: {redact(reason)[:300]}",
            hint="is the Ray head up? check deploy.ray.address / RAY_ADDRESS; nothing was "
            "changed, run the command again once it answers", retryable=True)

    def version(self) -> dict[str, Any]:
        return _obj(self._call("GET", "/api/version"))

    def nodes(self) -> Any:
        """The cluster's nodes with their total resources (state API, Ray >= 2.4)."""
        return self._call("GET", "/api/v0/nodes?detail=1")

    def cluster_status(self) -> Any:
        """The autoscaler's view (node types it can start); None where not served."""
        return self._call("GET", "/api/cluster_status?format=0", ok_404=True)

    def list_jobs(self) -> list[dict[str, Any]]:
        jobs = self._call("GET", "/api/jobs/")
        return [j for j in map(_job, jobs) if j is not None] if isinstance(jobs, list) else []

    def get_job(self, submission_id: str) -> dict[str, Any] | None:
        quoted = urllib.parse.quote(submission_id, safe="")
        return _job(self._call("GET", f"/api/jobs/{quoted}", ok_404=True))

    def submit(self, payload: dict[str, Any]) -> str:
        body = {k: payload[k] for k in SUBMIT_KEYS if payload.get(k) is not None}
        runtime_env = body.get("runtime_env") or {}
        if _needs_upload(runtime_env):
            return self._submit_with_ray(body)
        out = self._call("POST", "/api/jobs/", body)
        return str(_obj(out).get("submission_id") or body.get("submission_id"))

    def _submit_with_ray(self, body: dict[str, Any]) -> str:
        from ray.job_submission import JobSubmissionClient

        try:
            client = JobSubmissionClient(self.address)
            return str(client.submit_job(**body))
        except (ConnectionError, RuntimeError) as exc:
            raise BackendError(f"Ray job submission to {self.address} failed: {exc}",
                               retryable=True) from None

    def stop(self, submission_id: str) -> bool:
        quoted = urllib.parse.quote(submission_id, safe="")
        out = self._call("POST", f"/api/jobs/{quoted}/stop", ok_404=True)
        return bool(_obj(out).get("stopped"))

    def delete(self, submission_id: str) -> bool:
        quoted = urllib.parse.quote(submission_id, safe="")
        out = self._call("DELETE", f"/api/jobs/{quoted}", ok_404=True)
        return bool(_obj(out).get("deleted"))

    def logs(self, submission_id: str) -> str:
        quoted = urllib.parse.quote(submission_id, safe="")
        out = self._call("GET", f"/api/jobs/{quoted}/logs", ok_404=True)
        return str(_obj(out).get("logs") or "")


JOB_TEXT = ("submission_id", "job_id", "status", "message", "entrypoint", "type",
            "error_type", "driver_node_id", "driver_agent_http_address")
"""A job's fields that are text (``None`` when absent); any other type reads as absent."""
JOB_NUMBERS = ("start_time", "end_time", "driver_exit_code")
"""A job's fields that are numbers (times in ms, an exit code); any other type: absent."""


def _job(answer: Any) -> dict[str, Any] | None:
    """A job of the Jobs API in the shapes the backend reads: a mapping, its ``metadata`` a
    mapping of text to text (other entries left out), its text and number fields of their
    types or None, its ``runtime_env`` a mapping; None for an answer that is no job."""
    if not isinstance(answer, dict):
        return None
    meta = answer.get("metadata")
    out = dict(answer)
    out["metadata"] = {k: v for k, v in meta.items() if isinstance(k, str)
                       and isinstance(v, str)} if isinstance(meta, dict) else {}
    for key in JOB_TEXT:
        if not isinstance(out.get(key), str):
            out[key] = None
    for key in JOB_NUMBERS:
        value = out.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            out[key] = None
    if not isinstance(out.get("runtime_env"), dict):
        out["runtime_env"] = {}
    return out


def _obj(answer: Any) -> dict[str, Any]:
    """An answer that should be a JSON object; any other shape reads as an empty one."""
    return answer if isinstance(answer, dict) else {}


def _needs_upload(runtime_env: dict[str, Any]) -> bool:
    """A local folder in working_dir / py_modules must be uploaded by Ray's client."""
    def local(uri: Any) -> bool:
        return isinstance(uri, str) and not is_uri(uri)

    return local(runtime_env.get("working_dir")) or any(
        local(m) for m in runtime_env.get("py_modules", []) or [])
