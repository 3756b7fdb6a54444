"""``plan``'s check of each rendered object against the live CRD's rules (enums and CEL
``x-kubernetes-validations``), on create and on update with the live object as ``oldSelf``.

A cluster that predates CEL (or a rule the server's dry run does not reach) would accept what
a modern one refuses; checking here gives the same answer on every server. Two outcomes:

- a rule the object breaks whatever is live (a bad ``managedBy``, a ``storageUri`` without a
  scheme) is a located error (``CrdRuleError``, FILE:LINE:COL of the spec field behind it);
- a transition rule (``self == oldSelf``) the update breaks is what a REPLACE is for: the
  plan replaces the object, so the server's refusal of the update dry run is expected.

The CRDs are read once per plan (``Reader.crd``); without permission to read them, or
without cel-python, the plan says so in a warning and relies on the server. A verdict is
kept between runs (``cel_verdicts``): planning the same change again builds no CEL parser.
"""

from __future__ import annotations

from typing import Any

from ftspec.compiler.crd_rules import Violation, check, evaluator_available
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes import cel_verdicts
from ftspec.reconciler.kubernetes.reads import Reader
from ftspec.reconciler.kubernetes.resources import resource_of

SKIPPED = ("CRD rules (CEL) not checked: cel-python is not installed "
           "(pip install 'ftspec[kubernetes]'); the server's dry run still checks them")


class CrdRuleError(BackendError):
    """A rendered object breaks a rule of the CRD the cluster serves."""

    def __init__(self, message: str, spec_path: str | None) -> None:
        super().__init__(message, hint="a cluster serving this CRD rejects the object; fix "
                         "the spec field named above")
        self.spec_path = spec_path


class CrdRules:
    """The live CRDs of one plan, read once each."""

    def __init__(self, reader: Reader, known: dict[str, dict[str, Any] | None] | None = None
                 ) -> None:
        """``known``: CRDs this run already read (name -> CRD, None: not readable)."""
        self.reader = reader
        self.available = evaluator_available()
        self._crds: dict[str, dict[str, Any] | None] = known if known is not None else {}
        self._schemas: dict[int, str] = {}
        """id(CRD) -> the digest of its schemas (``cel_verdicts``), for the CRDs above."""

    def _crd(self, kind: str) -> dict[str, Any] | None:
        res = resource_of(kind)
        if not res.group:
            return None
        name = f"{res.plural}.{res.group}"
        if name not in self._crds:
            self._crds[name] = self.reader.crd(name)
        crd = self._crds[name]
        return None if crd is None or crd.get("missing") else crd

    def violations(self, obj: dict[str, Any], live: dict[str, Any] | None
                   ) -> tuple[list[Violation], list[Violation]]:
        """(rules broken on create, transition rules broken by the update from ``live``)."""
        if not self.available:
            return [], []
        crd = self._crd(str(obj.get("kind")))
        if crd is None:
            return [], []
        if not cel_verdicts.enabled():
            return self._check(obj, crd, live)
        schema = self._schemas.get(id(crd))
        if schema is None:
            schema = self._schemas[id(crd)] = cel_verdicts.schema_digest(crd)
        key = cel_verdicts.key_of(crd, schema, obj, live)
        kept = cel_verdicts.recall(key)
        if kept is not None:
            return kept
        verdict = self._check(obj, crd, live)
        cel_verdicts.keep(key, verdict)
        return verdict

    @staticmethod
    def _check(obj: dict[str, Any], crd: dict[str, Any], live: dict[str, Any] | None
               ) -> tuple[list[Violation], list[Violation]]:
        fresh = check(obj, crd)
        if live is None:
            return fresh, []
        seen = {(v.path, v.rule) for v in fresh}
        moved = [v for v in check(obj, crd, live) if (v.path, v.rule) not in seen]
        return fresh, moved


def rule_error(obj: dict[str, Any], v: Violation, overrides: dict[str, Any]) -> CrdRuleError:
    from ftspec.compiler.crd_findings import spec_key_for

    kind = str(obj.get("kind"))
    key = spec_key_for(overrides, kind, v.path)
    rule = "" if v.rule == "enum" else f" (CEL rule `{v.rule}`)"
    return CrdRuleError(f"the cluster's {kind} CRD refuses {v.field or 'the object'}: "
                        f"{v.message}{rule}", ".".join(map(str, key)) if key else None)


def field_spec_path(job: Any, obj: dict[str, Any], field: str) -> str | None:
    """The spec key behind an object field a server named (``spec.managedBy``)."""
    import re

    from ftspec.compiler.crd_findings import spec_key_for

    parts: list[str | int] = [int(i) if i else n
                              for n, i in re.findall(r"([^.\[\]]+)|\[(\d+)\]", field)]
    key = spec_key_for(job.spec.overrides.model_dump(), str(obj.get("kind")), parts)
    return ".".join(map(str, key)) if key else None
