"""What every target implements, and what it produces."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job

ArtifactKind = Literal["command", "config", "manifest", "submission"]


@dataclass(frozen=True)
class Artifact:
    """One emitted file. ``obj`` is the structured form for manifests and submissions
    (what the reconciler applies); ``content`` is the exact bytes written by `compile`."""

    path: str
    """Relative file name inside the output folder, e.g. ``trainjob.yaml``."""
    kind: ArtifactKind
    content: str
    obj: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Launch:
    """A launcher's run: the command line plus the files it reads, keyed by file name.

    Platform targets embed it: the TrainJob's command/args, the RayJob's entrypoint and
    runtime_env, the local backend's child process.
    """

    argv: tuple[str, ...]
    files: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)


class Target(Protocol):
    name: str

    def check(self, job: Job) -> list[Diagnostic]:
        """Target-specific problems (paths into the spec, no spans)."""
        ...

    def compile(self, job: Job) -> list[Artifact]:
        """Pure and deterministic: the same Job gives byte-identical artifacts."""
        ...
