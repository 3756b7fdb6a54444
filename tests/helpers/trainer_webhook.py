"""A stand-in for the Kubeflow Trainer's TrainJob validating webhook on the API-server-only test
cluster (``kube_cluster``), where a test controls what the real one leaves to timing: its cache
lag, a JobSet that stays (``tests/realcluster`` runs the real Trainer for the same rules).

It enforces two of the Trainer v2.3.0 rules as its source states them, and answers as
controller-runtime does (``admission.Denied``: 403, reason Forbidden, the field errors as
text), so the real kube-apiserver wraps the refusal exactly as it wraps the Trainer's:

- ``ValidateObjects`` (``pkg/runtime/core/trainingruntime.go``): the runtime a TrainJob
  names must exist, read from the webhook's informer cache, which sees a new runtime only
  after ``cache_lag_s`` (``specified trainingRuntime must be created before the TrainJob is
  created``);
- ``checkRuntimePatchesImmutability`` (``plugins/jobset``): ``spec.runtimePatches`` may change
  only when the TrainJob is suspended before or after the update.

Scoped to one namespace (a label on it); started and stopped by a test.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.kubeapi import MERGE_PATCH, KubeApiError

NAME = "validator.trainjob.trainer.kubeflow.org"
PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


class TrainerRules:
    def __init__(self, cluster: Any, namespace: str, cache_lag_s: float = 0.0) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.cache_lag_s = cache_lag_s
        self.config = f"ftspec-test-trainer-rules-{namespace}"
        self.denials: list[str] = []
        self._seen: dict[str, float] = {}
        self._server: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ rules
    def _runtime_visible(self, ns: str, ref: dict[str, Any]) -> bool:
        kind = ref.get("kind") or "ClusterTrainingRuntime"
        plural = "trainingruntimes" if kind == "TrainingRuntime" else "clustertrainingruntimes"
        where = f"namespaces/{ns}/" if kind == "TrainingRuntime" else ""
        try:
            self.cluster.request(
                "GET", f"/apis/trainer.kubeflow.org/v1alpha1/{where}{plural}/{ref.get('name')}")
        except KubeApiError as err:
            if err.status == 404:
                return False
            raise
        first = self._seen.setdefault(f"{kind}/{ns}/{ref.get('name')}", time.monotonic())
        return time.monotonic() - first >= self.cache_lag_s

    def refusal(self, request: dict[str, Any]) -> str | None:
        obj = request.get("object") or {}
        if request.get("subResource") or obj.get("kind") != "TrainJob":
            return None
        spec = obj.get("spec") or {}
        ref = spec.get("runtimeRef") or {}
        ns = (obj.get("metadata") or {}).get("namespace") or request.get("namespace")
        if not self._runtime_visible(str(ns), ref):
            plural = "trainingruntimes" if ref.get("kind") == "TrainingRuntime" \
                else "clustertrainingruntimes"
            what = "trainingRuntime" if ref.get("kind") == "TrainingRuntime" \
                else "clusterTrainingRuntime"
            return (f"spec.runtimeRef: Invalid value: {json.dumps(ref)}: {plural}.trainer."
                    f'kubeflow.org "{ref.get("name")}" not found: specified {what} must be '
                    "created before the TrainJob is created")
        old = request.get("oldObject") if request.get("operation") == "UPDATE" else None
        if old is not None:
            before = (old.get("spec") or {})
            if before.get("runtimePatches") != spec.get("runtimePatches") and not (
                    before.get("suspend") is True or spec.get("suspend") is True):
                return ("spec.runtimePatches: Forbidden: RuntimePatches can only be modified "
                        "when the TrainJob is suspended before or after the update")
        return None

    def review(self, body: dict[str, Any]) -> dict[str, Any]:
        request = body.get("request") or {}
        message = self.refusal(request)
        response: dict[str, Any] = {"uid": request.get("uid"), "allowed": message is None}
        if message is not None:
            self.denials.append(message)
            response["status"] = {"code": 403, "reason": "Forbidden", "message": message}
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": response}

    # ------------------------------------------------------------------ serving
    def __enter__(self) -> TrainerRules:  # noqa: PYI034 - a plain class, never subclassed
        rules = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = json.dumps(rules.review(json.loads(self.rfile.read(length)))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tmp = self.cluster.tmp_dir
        context.load_cert_chain(str(tmp / "server.crt"), str(tmp / "server.key"))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server
        self.cluster.request("PATCH", f"/api/v1/namespaces/{self.namespace}", {
            "metadata": {"labels": {"ftspec.test/trainer-rules": self.namespace}}},
            content_type=MERGE_PATCH)
        self.cluster.request("POST", PATH, self._configuration(server.server_address[1]))
        self._wait_enforced()
        return self

    def _configuration(self, port: int) -> dict[str, Any]:
        ca = base64.b64encode(self.cluster.ca_path.read_bytes()).decode()
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": self.config},
            "webhooks": [{
                "name": NAME,
                "clientConfig": {"url": f"https://127.0.0.1:{port}/validate", "caBundle": ca},
                "rules": [{"apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["*"],
                           "operations": ["CREATE", "UPDATE"], "resources": ["trainjobs"]}],
                "namespaceSelector": {"matchLabels": {
                    "ftspec.test/trainer-rules": self.namespace}},
                "failurePolicy": "Fail", "sideEffects": "None",
                "admissionReviewVersions": ["v1"], "timeoutSeconds": 10,
            }],
        }

    def _wait_enforced(self) -> None:
        probe = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                 "metadata": {"name": "probe", "namespace": self.namespace},
                 "spec": {"runtimeRef": {"name": "no-such-runtime", "kind": "TrainingRuntime"}}}
        path = (f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{self.namespace}/trainjobs"
                "?dryRun=All")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.cluster.request("POST", path, probe)
            except KubeApiError as err:
                if NAME in str(err):
                    self.denials.clear()
                    return
            time.sleep(0.2)
        raise AssertionError("the test Trainer webhook was not enforced within 30 s")

    def __exit__(self, *exc: object) -> None:
        try:
            self.cluster.request("DELETE", f"{PATH}/{self.config}")
        finally:
            if self._server is not None:
                self._server.shutdown()
