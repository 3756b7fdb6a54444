"""Before changing anything: namespace, runtime, secrets and claims exist; the user may do it
all (``preflight``, at apply). ``spec_preflight`` makes the existence checks at plan time, each
missing object an error at the spec field that names it."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ftspec.reconciler.backend import BackendError, Desired
from ftspec.reconciler.kubernetes.errors import ApiError
from ftspec.reconciler.kubernetes.resources import KINDS, resource_of
from ftspec.reconciler.kubernetes.transport import Transport
from ftspec.reconciler.model import Action, Change
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity
from ftspec.spec.ir import Job

VERBS: dict[Action, tuple[str, ...]] = {
    Action.CREATE: ("create", "patch"),
    Action.UPDATE: ("patch",),
    Action.REPLACE: ("delete", "create", "patch"),
    Action.DELETE: ("delete",),
}

Check = tuple[str, str, str, str]
"""(verb, group, resource, namespace)"""


def _obj(change: Change) -> dict[str, Any]:
    return change.after or change.before or {}


def needed_access(changes: list[Change]) -> list[Check]:
    checks: list[Check] = []
    namespaces = set()
    for change in changes:
        obj = _obj(change)
        res = resource_of(str(obj.get("kind")))
        ns = (obj.get("metadata") or {}).get("namespace") or ""
        namespaces.add(ns)
        for verb in VERBS.get(change.action, ()) + ("get",):
            checks.append((verb, res.group, res.plural, ns))
    for ns in sorted(namespaces - {""}):
        for verb in ("create", "get", "update", "delete"):
            checks.append((verb, "coordination.k8s.io", "leases", ns))
    return list(dict.fromkeys(checks))


def _secret_names(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, sub in value.items():
            if key in ("secretKeyRef", "secretRef") and isinstance(sub, dict) and sub.get("name"):
                yield str(sub["name"])
            elif key == "imagePullSecrets" and isinstance(sub, list):
                yield from (str(s["name"]) for s in sub if isinstance(s, dict) and s.get("name"))
            else:
                yield from _secret_names(sub)
    elif isinstance(value, list):
        for item in value:
            yield from _secret_names(item)


def _claims(value: Any) -> Iterator[str]:
    """Every ``persistentVolumeClaim.claimName`` under ``value``."""
    if isinstance(value, dict):
        for key, sub in value.items():
            if key == "persistentVolumeClaim" and isinstance(sub, dict) and sub.get("claimName"):
                yield str(sub["claimName"])
            else:
                yield from _claims(sub)
    elif isinstance(value, list):
        for item in value:
            yield from _claims(item)


def _exists(t: Transport, path: str, what: str) -> bool | None:
    """True/False, or None when the user may not look."""
    try:
        return t.request("GET", path, verb="get", what=what, ok_404=True) is not None
    except ApiError as exc:
        if exc.status == 403:
            return None
        raise


def references(changes: list[Change]) -> list[tuple[str, str, str]]:
    """(what, path, advice) for every object the plan needs to exist beforehand."""
    creating = {(str(_obj(c).get("kind")), (_obj(c).get("metadata") or {}).get("name"))
                for c in changes if c.after is not None}
    refs: list[tuple[str, str, str]] = []
    for change in changes:
        obj = change.after
        if obj is None:
            continue
        ns = (obj.get("metadata") or {}).get("namespace")
        if ns:
            refs.append((f"namespace {ns}", KINDS["Namespace"].path(name=ns),
                         f"create it (kubectl create namespace {ns}) or set metadata.namespace"))
        runtime = (obj.get("spec") or {}).get("runtimeRef") or {}
        kind = runtime.get("kind") or "ClusterTrainingRuntime"
        if runtime.get("name") and (kind, runtime["name"]) not in creating:
            path = resource_of(kind).path(ns, runtime["name"])
            refs.append((f"{kind} {runtime['name']}", path,
                         "install the runtime or change deploy.kubeflow.runtime"))
        for secret in sorted(set(_secret_names(obj.get("spec")))):
            refs.append((f"secret {ns}/{secret}", KINDS["Secret"].path(ns, secret),
                         "create the secret or fix the secrets: section of the spec"))
        for claim in sorted(set(_claims(obj.get("spec")))):
            refs.append((f"persistentvolumeclaim {ns}/{claim}",
                         KINDS["PersistentVolumeClaim"].path(ns, claim),
                         "create the claim or fix the pvc:// location in the spec"))
    return list(dict.fromkeys(refs))


def preflight(t: Transport, changes: list[Change]) -> list[str]:
    """Raise BackendError naming every problem; return warnings (checks we could not make)."""
    changes = [c for c in changes if c.action is not Action.NOOP]
    if not changes:
        return []
    checks = needed_access(changes)
    refs = references(changes)

    def review(check: Check) -> bool:
        verb, group, resource, ns = check
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": verb, "group": group,
                                                "resource": resource, "namespace": ns}}}
        out = t.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body,
                        verb="create", what="selfsubjectaccessreviews") or {}
        return bool((out.get("status") or {}).get("allowed"))

    with ThreadPoolExecutor(max_workers=16) as pool:
        allowed = list(pool.map(review, checks))
        found = list(pool.map(lambda r: _exists(t, r[1], r[0]), refs))
    problems: list[str] = []
    for (verb, group, resource, ns), ok in zip(checks, allowed):
        if not ok:
            res = f"{resource}.{group}" if group else resource
            problems.append(f"you may not {verb} {res} in namespace {ns or '(cluster)'}")
    warnings: list[str] = []
    for (what, _path, advice), exists in zip(refs, found):
        if exists is False:
            problems.append(f"{what} does not exist: {advice}")
        elif exists is None:
            warnings.append(f"could not check that {what} exists (not allowed to read it)")
    if problems:
        denied = any(p.startswith("you may not") for p in problems)
        raise BackendError(
            "preflight failed, nothing was changed:\n  - " + "\n  - ".join(problems),
            hint=("ask a cluster admin for a Role granting the verbs above, or use another "
                  "--context" if denied else "fix the items above and run apply again"))
    return warnings


MISSING = "preflight.missing-object"


class PreflightError(BackendError):
    """Objects the plan's changes need are missing: ``diagnostics`` at the spec fields."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        missing = sum(d.code == MISSING for d in diagnostics)
        other = len(diagnostics) - missing
        said = [f"{missing} object(s) the plan needs do not exist in the cluster"] \
            if missing else []
        if other:
            said.append(f"{other} problem(s) that the cluster's objects show (above)")
        super().__init__("preflight failed: " + "; ".join(said),
                         hint="create them or fix the spec; nothing was changed" if missing
                         else "fix the spec; nothing was changed")
        self.diagnostics = diagnostics


def _field(job: Job, what: str) -> KeyPath:
    """The spec field that names the object ``what`` (a ``references`` entry)."""
    kind, _, ref = what.partition(" ")
    name = ref.rsplit("/", 1)[-1]
    spec = job.spec
    if kind == "secret":
        for key, secret in spec.secrets.items():
            if secret.secretRef is not None and secret.secretRef.name == name:
                return ("secrets", key)
        pulls = spec.deploy.scheduling.image_pull_secrets
        if name in pulls:
            return ("deploy", "scheduling", "image_pull_secrets", pulls.index(name))
        return ("secrets",)
    if kind == "persistentvolumeclaim":
        for path, uri in spec.uris():
            if uri.startswith(f"pvc://{name}/") or uri == f"pvc://{name}":
                return path
        return ("output", "uri")
    return ("deploy", "kubeflow", "runtime")


def spec_preflight(t: Transport, desired: Desired, objects: list[dict[str, Any]],
                   seen: dict[str, bool | None]) -> list[Diagnostic]:
    """At plan time: the runtime, secrets (image pull secrets too) and claims ``objects``
    (those apply creates or changes) need exist, each missing one an error at the spec
    field naming it. ``seen`` remembers answers across the specs of one plan. A missing
    namespace is left to the plan's own warning (nothing in it can exist yet); one the
    user may not read is not checked."""
    every = references([Change("", Action.CREATE, None, o) for o in objects])
    namespaces = [r for r in every if r[0].startswith("namespace ")]
    refs = [r for r in every if not r[0].startswith("namespace ")]
    for _what, path, _advice in namespaces:
        if path not in seen:
            seen[path] = _exists(t, path, _what)
        if seen[path] is False:
            return []
    found: list[Diagnostic] = []
    for what, path, advice in refs:
        if path not in seen:
            seen[path] = _exists(t, path, what)
        if seen[path] is False:
            field = _field(desired.job, what)
            span = desired.doc.span_of(field) if desired.doc is not None else None
            found.append(Diagnostic(Severity.ERROR, f"{what} does not exist in the cluster",
                                    path=field, span=span, hint=advice,
                                    code=MISSING))
    return sorted(found, key=lambda d: (d.span.line, d.span.col) if d.span else (0, 0))
