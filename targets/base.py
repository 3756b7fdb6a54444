"""What every target implements, and what it produces."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job

ArtifactKind = Literal["command", "config", "manifest", "submission"]


@dataclass(frozen=True, eq=False)
class Artifact:
    """One emitted file. ``obj`` is the structured form for manifests and submissions
    (what the reconciler applies); ``content`` is the exact bytes written by `compile`.

    ``text`` may be a function that renders the content: it runs on first use only, so
    `plan` over many specs (which applies ``obj`` and never writes files) does not pay for
    YAML text nobody reads."""

    path: str
    """Relative file name inside the output folder, e.g. ``trainjob.yaml``."""
    kind: ArtifactKind
    text: str | Callable[[], str]
    obj: Mapping[str, Any] | None = None

    @property
    def content(self) -> str:
        if callable(self.text):
            object.__setattr__(self, "text", self.text())
        assert isinstance(self.text, str)
        return self.text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Artifact):
            return NotImplemented
        return (self.path, self.kind, self.content, self.obj) == (
            other.path, other.kind, other.content, other.obj)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Launch:
    """A launcher's run: the command line plus the files it reads, keyed by file name.

    Platform targets embed it: the TrainJob's command/args, the RayJob's entrypoint and
    runtime_env, the local backend's child process.
    """

    argv: tuple[str, ...]
    files: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)


def launch_data(launch: Launch) -> dict[str, Any]:
    """A launch as the structured form (``Artifact.obj``) of a launcher's command file."""
    return {"argv": list(launch.argv), "files": dict(launch.files), "env": dict(launch.env)}


def launch_of(artifacts: Sequence[Artifact]) -> Launch | None:
    """The launch a launcher's compiled artifacts carry (what the local backend runs)."""
    for art in artifacts:
        if art.kind == "command" and art.obj is not None:
            obj = art.obj
            return Launch(argv=tuple(obj["argv"]), files=dict(obj["files"]),
                          env=dict(obj["env"]))
    return None


class Target(Protocol):
    name: str

    def check(self, job: Job) -> list[Diagnostic]:
        """Target-specific problems (paths into the spec, no spans)."""
        ...

    def compile(self, job: Job) -> list[Artifact]:
        """Pure and deterministic: the same Job gives byte-identical artifacts."""
        ...
