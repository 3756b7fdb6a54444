"""HTTP failures from the API server -> ``BackendError`` that says what to do."""

from __future__ import annotations

import json
import re
from typing import Any

from ftspec.compiler.crd_findings import spec_path_for
from ftspec.reconciler.backend import BackendError

CONTROLLERS: dict[str, str] = {
    "trainer.kubeflow.org": "the Kubeflow Trainer (v2) controller and its CRDs "
                            "(kubectl apply --server-side -k "
                            "github.com/kubeflow/trainer/manifests/overlays/manager)",
    "ray.io": "the KubeRay operator and its CRDs (helm install kuberay-operator "
              "kuberay/kuberay-operator)",
}


class ApiError(BackendError):
    """An HTTP error answer: ``status`` code and the server's Status body."""

    def __init__(self, message: str, *, status: int, body: dict[str, Any] | None = None,
                 hint: str | None = None, retryable: bool = False,
                 spec_path: str | None = None, bad_value: str | None = None) -> None:
        super().__init__(message, hint=hint, retryable=retryable)
        self.status = status
        self.body = body or {}
        self.spec_path = spec_path
        self.bad_value = bad_value
        """The value the server called invalid, to narrow ``spec_path`` to the key holding it."""
        self.fields: list[str] = []
        """The object fields a 422 or an admission webhook's refusal names (``spec.managedBy``)."""
        self.webhook: str | None = None
        """The admission webhook that refused the request (its message says so), else None."""
        self.policy: str | None = None
        """The ValidatingAdmissionPolicy that refused the request, else None."""


def parse_body(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw.decode("utf-8", "replace") or "{}")
    except ValueError:
        return {"message": raw.decode("utf-8", "replace")[:500]}
    return data if isinstance(data, dict) else {"message": str(data)}


def _conflicts(message: str) -> str:
    found = re.findall(r'conflict with "([^"]+)"(?: using [^:]+)?: ([^\n]+)', message)
    if not found:
        return message
    rows = [f'field {fld.strip()} is owned by field manager "{mgr}"' for mgr, fld in found]
    return "; ".join(rows)


ADMISSION = re.compile(r'admission webhook "([^"]+)" denied the request')
"""How the API server words any admission webhook's refusal, whatever its HTTP status (the
Trainer's and JobSet's webhooks deny with 403 Forbidden, a CEL rule with 422)."""
POLICY = re.compile(
    r"ValidatingAdmissionPolicy '([^']+)'(?: with binding '([^']+)')? denied request: ")
"""How the API server words a ValidatingAdmissionPolicy's refusal: HTTP 422 by default, or the
status of the reason the policy gives (403 for ``Forbidden``, which RBAC answers with too)."""
FIELD_ERROR = re.compile(
    r"(?:is invalid: |denied the request: \[?|; |, )([A-Za-z][\w.\[\]]*): (?:Invalid value|"
    r"Forbidden|Required value|Unsupported value|Duplicate value|Not found|Too long|Too many|"
    r"Internal error)")
"""A Go ``field.Error`` in a message: ``spec.runtimeRef: Invalid value: …``."""


def _fields(body: dict[str, Any], message: str) -> list[str]:
    """The object fields the server's answer names: its causes, then the field errors its
    message carries (an admission webhook's refusal has them in the message only)."""
    causes = (body.get("details") or {}).get("causes") or []
    fields = [str(c.get("field")) for c in causes if isinstance(c, dict) and c.get("field")]
    return list(dict.fromkeys(fields + FIELD_ERROR.findall(message)))


def admission_error(status: int, body: dict[str, Any], webhook: str, *, verb: str,
                    what: str) -> ApiError:
    """An admission webhook's refusal: the server's words, located at the spec field it
    names; never a permission problem, whatever the status (403 included)."""
    message = str(body.get("message") or "")
    fields = _fields(body, message)
    spec_path = next((p for p in map(spec_path_for, fields) if p), None)
    err = ApiError(f"the server refused to {verb} {what}: {message}", status=status,
                   body=body, spec_path=spec_path,
                   hint=f"the admission webhook {webhook} (a controller's rule, not RBAC) "
                   "refused it; fix the spec field named above, or see the controller's "
                   "documentation for the rule")
    err.fields = fields
    err.webhook = webhook
    return err


def policy_error(status: int, body: dict[str, Any], found: re.Match[str], *, verb: str,
                 what: str) -> ApiError:
    """A cluster policy's refusal: the policy's own message; never a permission problem nor
    an invalid spec value (a policy names no field), whatever the status."""
    policy, binding = found.group(1), found.group(2)
    said = found.string[found.end():]
    by = f"ValidatingAdmissionPolicy {policy}" + (f" (binding {binding})" if binding else "")
    err = ApiError(f"the server refused to {verb} {what}: the cluster's {by} denied it: {said}",
                   status=status, body=body,
                   hint=f"a policy of this cluster, not RBAC nor the CRD's schema: change the "
                   f"spec so the object meets it, or ask a cluster admin about the policy "
                   f"(kubectl get validatingadmissionpolicy {policy} -o yaml)")
    err.policy = policy
    return err


def api_error(status: int, body: dict[str, Any], *, verb: str, what: str,
              server: str = "", context: str = "") -> ApiError:
    message = str(body.get("message") or body.get("reason") or f"HTTP {status}")
    webhook = ADMISSION.search(message)
    if webhook and status != 422:
        return admission_error(status, body, webhook.group(1), verb=verb, what=what)
    policy = POLICY.search(message)
    if policy and not webhook:
        return policy_error(status, body, policy, verb=verb, what=what)
    if status == 401:
        return ApiError(f"the API server {server} rejected the credentials of context "
                        f"{context!r} (401 Unauthorized)", status=status, body=body,
                        hint="refresh the token in your kubeconfig, or pick another --context")
    if status == 403 and body.get("reason") in ("Forbidden", None):  # RBAC says so
        found = re.search(r'cannot (\w+) resource "([^"]+)"(?: in API group "([^"]*)")?', message)
        if found:
            verb = found.group(1)
            resource = found.group(2) + (f".{found.group(3)}" if found.group(3) else "")
        else:
            resource = what.split(" ")[0]
        return ApiError(f"forbidden: you may not {verb} {resource} ({what}): {message}",
                        status=status, body=body, hint=f"ask a cluster admin for a Role that "
                        f"allows {verb} on {resource}, or use another --context")
    if status == 409 and "conflict" in message.lower() and "apply" in message.lower():
        return ApiError(f"{verb} {what}: conflict with another field manager: "
                        f"{_conflicts(message)}", status=status, body=body,
                        hint="another tool changed these fields; re-run with --force-conflicts "
                        "to take them over, or change the spec to match")
    if status == 409:
        return ApiError(f"{verb} {what}: {message}", status=status, body=body, retryable=True,
                        hint="the object changed concurrently; run plan again")
    if status == 422:
        causes = (body.get("details") or {}).get("causes") or []
        fields = _fields(body, message)
        spec_path = next((p for p in map(spec_path_for, fields) if p), None)
        bad = next((m.group(1) for c in causes
                    if (m := re.search(r'Invalid value: "((?:[^"\\]|\\.)*)"',
                                       str(c.get("message", ""))))), None)
        err = ApiError(f"the API server rejected {what} as invalid: {message}", status=status,
                       body=body, spec_path=spec_path, bad_value=bad,
                       hint="fix the spec value named above (see `ftspec compile` for the "
                       "generated object)")
        err.fields = fields
        err.webhook = webhook.group(1) if webhook else None
        return err
    if status == 404 and what.startswith("kind "):
        return ApiError(f"{what} is not served by this cluster", status=status, body=body)
    retryable = status in (429, 500, 502, 503, 504)
    return ApiError(f"{verb} {what}: {message} (HTTP {status})", status=status, body=body,
                    retryable=retryable,
                    hint="transient server error; try again" if retryable else None)


def missing_crd(group: str, version: str, kind: str) -> BackendError:
    controller = CONTROLLERS.get(group, f"the controller that serves {group}")
    return BackendError(f"the cluster does not serve {kind} ({group}/{version}): its CRD is "
                        f"not installed", hint=f"install {controller}")


def unreachable(server: str, reason: str) -> BackendError:
    return BackendError(f"cannot reach the API server at {server}: {reason}",
                        hint="is the cluster up? check --kubeconfig/--context and the network; "
                        "this error is transient, try again", retryable=True)
