"""Immutable fields per kind and API generation: a change to one plans a REPLACE.

ftspec knows these itself because not every server enforces them (CEL rules need a recent
API server, and the KubeRay controller silently ignores RayJob spec changes). Patterns are
dotted paths where ``[]`` matches any list index and ``*`` any single key; a pattern matches
a changed path it is a prefix of, or that is a prefix of it (a whole section added/removed).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ftspec.spec.platforms import OVERRIDES_TRAINER

_POD = ("spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]"
        ".template.spec.template.spec.")

TRAINJOB_V22: tuple[str, ...] = (
    "spec.runtimeRef", "spec.initializer", "spec.trainer", "spec.activeDeadlineSeconds",
    "spec.managedBy", "spec.runtimePatches[].manager",
    *(_POD + f for f in ("containers", "initContainers", "imagePullSecrets", "securityContext",
                         "serviceAccountName", "terminationGracePeriodSeconds", "volumes")),
)
TRAINJOB_V21: tuple[str, ...] = ("spec.runtimeRef", "spec.managedBy")
RAYJOB: tuple[str, ...] = ("spec.*",)
RAYJOB_MUTABLE: tuple[str, ...] = ("spec.suspend",)
TRAINING_RUNTIME: tuple[str, ...] = tuple(
    "spec.template.spec." + f for f in (
        "failurePolicy", "network", "replicatedJobs[].dependsOn", "startupPolicy",
        "successPolicy", "volumeClaimPolicies")
)


def immutable_fields(kind: str, trainer_version: str | None = None) -> tuple[str, ...]:
    if kind == "TrainJob":
        return TRAINJOB_V21 if trainer_version == OVERRIDES_TRAINER else TRAINJOB_V22
    if kind == "RayJob":
        return RAYJOB
    if kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        return TRAINING_RUNTIME
    return ()


@lru_cache(maxsize=4096)
def _segments(path: str) -> tuple[str, ...]:
    """``a.b[3]["c.d"]`` -> ``("a", "b", "[]", "c.d")`` (kept: a plan asks for the same
    patterns and paths once per changed field of every object)."""
    path = re.sub(r"\[\d+\]", "[]", path)
    path = re.sub(r'\["([^"]*)"\]', r".\1", path)
    return tuple(s for s in re.split(r"\.|(?=\[\])", path) if s)


def _match(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    for p, s in zip(pattern, path):
        if p != s and p != "*":
            return False
    return True


def forcing_pattern(kind: str, path: str, trainer_version: str | None = None) -> str | None:
    """The immutable field a change at ``path`` touches, or None when it is mutable."""
    segs = _segments(path)
    if kind == "RayJob" and any(_match(_segments(m), segs) and len(segs) >= len(_segments(m))
                                for m in RAYJOB_MUTABLE):
        return None
    for pattern in immutable_fields(kind, trainer_version):
        if _match(_segments(pattern), segs):
            return pattern.replace("*", segs[1] if len(segs) > 1 else "*")
    return None


def suspend_gate(kind: str, trainer_version: str | None, live: dict[str, Any] | None,
                 desired: dict[str, Any]) -> str | None:
    """The TrainJob field any change of which forces a replace here, because the Trainer's
    webhook refuses it unless the TrainJob is suspended; None when the update is allowed.

    Trainer v2.3.0 (``checkRuntimePatchesImmutability``): a change to ``spec.runtimePatches``
    is refused unless ``spec.suspend`` is true before or after the update. The CRD tells
    only the generation (runtimePatches: v2.2 and later), so v2.2 gets v2.3's rule.
    The podTemplateOverrides generation (v2.1, and v2.0's podSpecOverrides before it) allows
    a change only when the updated TrainJob is suspended."""
    if kind != "TrainJob" or live is None:
        return None
    before = ((live.get("spec") or {}).get("suspend")) is True
    after = ((desired.get("spec") or {}).get("suspend")) is True
    if trainer_version == OVERRIDES_TRAINER:
        return None if after else "spec.podTemplateOverrides"
    return None if before or after else "spec.runtimePatches"


def gated(gate: str | None, path: str) -> bool:
    """A change at ``path`` touches the suspend-gated field ``gate``."""
    return gate is not None and _match(_segments(gate), _segments(path))
