"""The CRDs' CEL rules in the write path of the 1.20 test server: a validating admission webhook.

kube-apiserver 1.20 predates ``x-kubernetes-validations``, so ``crds.py`` strips them from the
CRDs it installs. This process gives them back: the server calls it (HTTPS on loopback,
``ValidatingWebhookConfiguration`` ``ftspec-cel-rules``, failurePolicy Fail, side-effect free
so server dry runs are checked too) for every CREATE and UPDATE of a ``trainer.kubeflow.org``
or ``ray.io`` object, and it evaluates the rules of the upstream CRD file installed for that
resource with ftspec's own evaluator (``ftspec.compiler.crd_rules``: cel-python), ``oldSelf``
bound to the stored object on UPDATE. A violation is denied with HTTP 422 and the rule's
message at its field, as a modern server answers.

Which upstream file each resource was installed from is read from ``crd-files.json`` in the
cluster's folder (``KubeCluster`` rewrites it when it reinstalls a CRD); the file is re-read
when it changes. Run: ``python -m harness.cel_webhook --dir CLUSTER_DIR --port PORT``.
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CONFIG_NAME = "ftspec-cel-rules"
FILES_NAME = "crd-files.json"
GROUPS = ("trainer.kubeflow.org", "ray.io")


def configuration(port: int, ca_bundle_b64: str) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration that routes every write of GROUPS here."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": CONFIG_NAME},
        "webhooks": [{
            "name": "cel-rules.ftspec.dev",
            "clientConfig": {"url": f"https://127.0.0.1:{port}/validate",
                             "caBundle": ca_bundle_b64},
            "rules": [{"apiGroups": list(GROUPS), "apiVersions": ["*"],
                       "operations": ["CREATE", "UPDATE"], "resources": ["*"], "scope": "*"}],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10,
        }],
    }


class Rules:
    """group/resource -> the upstream CRD (with its CEL rules), from ``crd-files.json``."""

    def __init__(self, folder: Path) -> None:
        self._file = folder / FILES_NAME
        self._stamp = -1
        self._crds: dict[str, dict[str, Any]] = {}

    def crd_for(self, group: str, resource: str) -> dict[str, Any] | None:
        stamp = self._file.stat().st_mtime_ns if self._file.exists() else 0
        if stamp != self._stamp:
            import yaml

            loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            files = json.loads(self._file.read_text()) if stamp else {}
            crds = {}
            for key, path in files.items():
                with open(path, "rb") as handle:
                    crds[key] = yaml.load(handle, Loader=loader)
            self._crds, self._stamp = crds, stamp
        return self._crds.get(f"{resource}.{group}")


def review(body: dict[str, Any], rules: Rules) -> dict[str, Any]:
    """AdmissionReview request -> AdmissionReview response."""
    from ftspec.compiler.crd_rules import check

    request = body.get("request") or {}
    resource = request.get("resource") or {}
    obj = request.get("object") or {}
    old = request.get("oldObject") if request.get("operation") == "UPDATE" else None
    crd = rules.crd_for(str(resource.get("group")), str(resource.get("resource")))
    violations = check(obj, crd, old) if crd is not None and not request.get("subResource") \
        else []
    response: dict[str, Any] = {"uid": request.get("uid"), "allowed": not violations}
    if violations:
        kind = f"{obj.get('kind')}.{resource.get('group')}"
        name = (obj.get("metadata") or {}).get("name", "")
        causes = [{"reason": "FieldValueInvalid", "field": v.field or "<root>",
                   "message": f"Invalid value: {v.message}"} for v in violations]
        text = "; ".join(f"{c['field']}: {c['message']}" for c in causes)
        response["status"] = {"code": 422, "reason": "Invalid",
                              "message": f'{kind} "{name}" is invalid: {text}',
                              "details": {"causes": causes}}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": response}


def serve(folder: Path, port: int) -> None:
    rules = Rules(folder)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                out = review(json.loads(self.rfile.read(length)), rules)
                code = 200
            except Exception as exc:  # noqa: BLE001 - the server reports it; Fail denies
                out, code = {"error": f"{type(exc).__name__}: {exc}"}, 500
            data = json.dumps(out).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            if not str(args[1] if len(args) > 1 else "").startswith("2"):
                sys.stderr.write(f"cel-webhook: {format % args}\n")

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(folder / "server.crt"), str(folder / "server.key"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("ready", flush=True)
    server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cel_webhook")
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    serve(args.dir, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
