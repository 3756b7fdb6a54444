"""The one table of diagnostic code prefixes: every ``Diagnostic.code`` is ``<prefix>.<name>``
with a prefix from ``PREFIXES``, which says which stage or check owns it.

``Findings`` refuses a prefix not listed here, and ``tests/spec/test_diagnostic_codes.py``
reads every code the package spells (``code="..."``, ``code=f"..."``, ``Findings("...")``)
and fails on one whose prefix is missing: a new check adds its prefix here first.
"""

from __future__ import annotations

PREFIXES: dict[str, str] = {
    "load": "reading the spec file: YAML, size and encoding limits (spec/loader.py)",
    "schema": "the JSON Schema check (spec/schema_check.py)",
    "model": "the pydantic model's own errors (spec/validate.py)",
    "override": "--set overrides (spec/overrides.py)",
    "rule": "cross-field rules (spec/rules/, compiler/checks.py)",
    "sweep": "sweep grids (compiler/sweep.py)",
    "compile": "compiling a spec for a target (compiler/pipeline.py)",
    "pricing": "time and cost estimates (compiler/pricing.py)",
    "import": "importers of other tools' recipes (compiler/importers/)",
    "kubernetes": "the CRD rules of a live cluster (compiler/crd_findings.py)",
    "contract": "the launcher field contract (targets/contract.py)",
    "target.accelerate": "the accelerate launcher's checks (targets/accelerate_*.py)",
    "target.torchtune": "the torchtune launcher's checks (targets/torchtune_*.py)",
    "fms_hf_tuning": "the fms-hf-tuning launcher's checks (targets/fms_hf_tuning.py)",
    "env": "the installed tools a launcher reads (targets/torchtune_snapshot.py: env.torchtune)",
    "kubeflow": "the kubeflow platform's checks (targets/kubeflow*.py, targets/kube.py)",
    "kuberay": "the kuberay platform's checks (targets/kuberay.py, targets/kube.py)",
    "ray": "the ray platform's checks (targets/ray*.py)",
    "local": "the local platform's checks (targets/kube.py names codes by deploy.target)",
    "preflight": "plan-time checks against what exists (reconciler/*/preflight.py)",
    "identity": "job identity across specs (reconciler/identity.py)",
}
"""Prefix -> who emits codes under it."""


def prefix_of(code: str) -> str | None:
    """The registered prefix ``code`` starts with (the longest), or None."""
    found = [p for p in PREFIXES if code == p or code.startswith(p + ".")]
    return max(found, key=len) if found else None
