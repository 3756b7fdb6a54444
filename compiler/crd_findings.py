"""The compiled Kubernetes objects against their CRDs' rules, as located diagnostics.

``validate`` checks them when CRD files are at hand (``FTSPEC_CRD_DIR``: the installation's
CRD folders, separated by ``os.pathsep``); ``plan`` checks them against the live CRDs it reads,
on update with the live object as ``oldSelf``. A violation is placed at the spec field that
produced the object's field: the user's own ``overrides.trainjob`` / ``overrides.rayjob``
value when the patch sets it, else the field ``FIELD_TO_SPEC`` maps it from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity

CODE = "kubernetes.crd-rule"

# Object field -> spec key path, for errors traceable to a spec line (CEL rules, a 422).
FIELD_TO_SPEC: tuple[tuple[str, str], ...] = (
    ("metadata.name", "metadata.name"),
    ("metadata.namespace", "metadata.namespace"),
    ("metadata.labels", "metadata.labels"),
    ("metadata.annotations", "metadata.annotations"),
    ("spec.runtimeRef", "deploy.kubeflow.runtime"),
    ("spec.trainer.numNodes", "resources.nodes"),
    ("spec.trainer.numProcPerNode", "resources.gpus_per_node"),
    ("spec.trainer.resourcesPerNode", "resources"),
    ("spec.trainer.image", "deploy.scheduling.image"),
    ("spec.initializer.model", "model.uri"),
    ("spec.initializer.dataset", "data.train.uri"),
    ("spec.activeDeadlineSeconds", "deploy.kubeflow.active_deadline_seconds"),
    ("spec.suspend", "deploy.kubeflow.suspend"),
    ("spec.template.spec.failurePolicy", "deploy.kubeflow.failure_policy"),
    ("spec.entrypoint", "launcher"),
    ("spec.rayClusterSpec.rayVersion", "deploy.kuberay.ray_version"),
)
OVERRIDES = {"TrainJob": "trainjob", "RayJob": "rayjob"}
"""Kind -> its ``overrides`` merge patch."""


def spec_path_for(field: str) -> str | None:
    field = re.sub(r"\[\d+\]", "", field)
    for prefix, spec_path in FIELD_TO_SPEC:
        if field == prefix or field.startswith(prefix + "."):
            return spec_path
    return None


def spec_key_for(overrides: dict[str, Any], kind: str, path: Sequence[str | int]
                 ) -> KeyPath | None:
    """The spec key behind an object's field: the overrides patch's value at that field (or
    at the deepest part of it the patch sets), else the ``FIELD_TO_SPEC`` field."""
    name = OVERRIDES.get(kind)
    patch: Any = overrides.get(name) if name else None
    depth = 0
    for part in path:
        if isinstance(part, str) and isinstance(patch, dict) and part in patch:
            patch, depth = patch[part], depth + 1
        else:
            break
    if name and depth >= 2:  # a field under spec (or metadata) the patch sets
        return ("overrides", name, *(str(p) for p in path[:depth]))
    dotted = ".".join(str(p) for p in path if isinstance(p, str))
    mapped = spec_path_for(dotted)
    return tuple(mapped.split(".")) if mapped else None


def diagnostics(objects: Sequence[dict[str, Any]], overrides: dict[str, Any],
                crd_for: Callable[[dict[str, Any]], dict[str, Any] | None],
                old_for: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
                *, where: str = "") -> list[Diagnostic]:
    """Every rule violation of ``objects`` (``old_for``: the live object, for transition
    rules), one error per violation."""
    from ftspec.compiler.crd_rules import check

    found = []
    for obj in objects:
        crd = crd_for(obj)
        if crd is None:
            continue
        old = old_for(obj) if old_for is not None else None
        for v in check(obj, crd, old):
            kind = str(obj.get("kind"))
            key = spec_key_for(overrides, kind, v.path) or ()
            rule = "" if v.rule == "enum" else f" (CEL rule `{v.rule}`)"
            found.append(Diagnostic(
                Severity.ERROR, f"the {kind} CRD{where} refuses {v.field or 'the object'}: "
                f"{v.message}{rule}", path=key, code=CODE,
                hint="a cluster serving this CRD would reject the object"))
    return found


def validate_findings(compiled: Any) -> list[Diagnostic]:
    """``validate``'s check of a spec compiled through stage ``checks`` against the CRD files
    under ``FTSPEC_CRD_DIR``: nothing when it is unset or the spec does not deploy to
    Kubernetes; a warning when cel-python is missing (the skip is said, never silent).
    The diagnostics come back placed in the spec."""
    import os

    job = compiled.job
    if not os.environ.get("FTSPEC_CRD_DIR"):
        return []  # validate stays light: nothing more is imported
    from ftspec.compiler import crd_rules
    from ftspec.compiler.dispatch import compile_job, default_target
    from ftspec.compiler.pipeline import place
    from ftspec.spec.platforms import PLATFORMS

    dirs = crd_rules.crd_dirs()
    if not dirs or job is None or not compiled.ok \
            or "crd-rules" not in PLATFORMS[job.target].preflight:
        return []
    if not crd_rules.evaluator_available():
        return place([Diagnostic(Severity.WARNING, "CRD rules not checked: cel-python is not "
                                 "installed (pip install 'ftspec[kubernetes]')",
                                 path=("deploy", "target"), code="kubernetes.crd-rules-skipped")],
                     compiled.doc)
    objects = [dict(a.obj) for a in compile_job(job, default_target(job))
               if a.kind == "manifest" and a.obj is not None]

    skipped: list[str] = []

    def crd_for(obj: dict[str, Any]) -> dict[str, Any] | None:
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        found = crd_rules.find_crd(group, str(obj.get("kind")), dirs, skipped)
        return found.crd if found is not None else None

    found = diagnostics(objects, job.spec.overrides.model_dump(), crd_for,
                        where=f" in {crd_rules.CRD_DIR_ENV}")
    found += [Diagnostic(Severity.WARNING, f"{crd_rules.CRD_DIR_ENV}: {why}",
                         path=("deploy", "target"), code="kubernetes.crd-file-skipped",
                         hint="only regular YAML files of one CRD each are read")
              for why in skipped]
    return place(found, compiled.doc)
