"""The backend protocol every live-state backend implements (kubernetes, ray, local).

Engine code never prints: progress goes through a ``Reporter``; the CLI renders it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ftspec.compiler.pipeline import CompileOptions
from ftspec.reconciler.inputs import InputState
from ftspec.reconciler.model import ApplyResult, Plan, Status
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job
from ftspec.spec.loader import SourceDoc
from ftspec.targets.base import Artifact


@dataclass(frozen=True)
class SweepPlace:
    """Where a job sits in its sweep: the sweep's id (the spec's id without the point), the
    point's position in grid order (0-based), the number of points, and
    ``sweep.max_parallel`` (None: the backend's default)."""

    sweep_id: str
    position: int
    size: int
    max_parallel: int | None = None


@dataclass(frozen=True)
class Desired:
    """One spec's desired state: its Job, the compiled artifacts, where the spec came from.

    ``doc`` is the loaded spec with its source map (overlays and ``--set`` included): errors
    found live (an API server's 422) are located through it."""

    job: Job
    artifacts: tuple[Artifact, ...]
    spec_file: str
    doc: SourceDoc | None = None
    inputs: tuple[InputState, ...] = ()
    """What the job reads, by content (``reconciler.inputs``): recorded with the run it
    applies and compared with the applied run's at plan."""
    sweep: SweepPlace | None = None
    """The job's place in its sweep; None outside one."""


class Reporter(Protocol):
    def event(self, message: str, **data: Any) -> None:
        """A progress event (``waiting for deletion``, ``step=12 loss=1.93`` …)."""
        ...


class NullReporter:
    def event(self, message: str, **data: Any) -> None:
        return None


class BackendError(Exception):
    """An environment failure with advice. ``retryable`` says whether trying again can help."""

    def __init__(self, message: str, *, hint: str | None = None, retryable: bool = False
                 ) -> None:
        super().__init__(message)
        self.hint = hint
        self.retryable = retryable


class StalePlanError(BackendError):
    """A saved plan whose inputs changed since it was made."""


ABSENT = "absent"
"""The digest of an address where nothing was read (``Plan.read_digests``)."""


@dataclass(frozen=True)
class StaleWords:
    """How a backend names what its plan read at ``address`` and how it changed, in
    "Saved plan is stale: {subject} {how} since the plan was made"."""

    subject: str
    """With ``{address}``: "the run of {address}"."""
    created: str = "was created"
    removed: str = "was removed"
    changed: str = "was changed"
    versions: bool = False
    """Whether the digests are worth showing ("(planned rv:12, now rv:15)")."""
    hint: str = "run `ftspec plan` again"

    def how(self, was: str, now: str) -> str:
        return self.created if was == ABSENT else self.removed if now == ABSENT else \
            self.changed

    def said(self, address: str, was: str, now: str) -> str:
        """What changed at ``address``, after "Saved plan is stale: "."""
        versions = f" (planned {was}, now {now})" if self.versions else ""
        return (f"{self.subject.format(address=address)} {self.how(was, now)} since the plan "
                f"was made{versions}")


@runtime_checkable
class Prefetcher(Protocol):
    """A backend that can start a spec's live reads while the next spec compiles."""

    def prefetch(self, desired: Desired) -> None:
        """Start the reads ``plan`` will need for ``desired`` (no writes, no waiting)."""
        ...

    def drop_prefetched(self) -> None:
        """Forget reads that will not be used (compiling failed): queued ones are cancelled."""
        ...


@runtime_checkable
class Preflighter(Protocol):
    """A backend that can tell, before anything starts, what would make a run fail."""

    def preflight(self, desired: Desired) -> list[Diagnostic]:
        """Problems with ``desired`` found without changing anything, each at its spec
        field (a missing input file, a launcher that is not installed, no room to save)."""
        ...


@runtime_checkable
class KeepsHistory(Protocol):
    """A backend that keeps the runs a replace or destroy ended (``local/generations.py``)."""

    def history(self, desired: Desired) -> list[dict[str, Any]]:
        """The kept generations of ``desired``'s job, oldest first."""
        ...


@runtime_checkable
class Measurer(Protocol):
    """A backend that can measure a run that ended (``reconciler.measured``)."""

    def measured(self, desired: Desired, reporter: Reporter | None = None) -> dict[str, Any]:
        """train_runtime_s, dataset tokens a second (per device), peak memory, validity;
        empty while the run has not ended. Work that takes long (a first measurement that
        counts the dataset's tokens) is said to ``reporter`` as it starts and ends."""
        ...


CAPABILITIES: tuple[type, ...] = (Prefetcher, Preflighter, KeepsHistory, Measurer)
"""What a backend may offer beside :class:`Backend` (the CLI asks with ``isinstance``). Each
backend module declares its class as ``CHECKED: tuple[type[Backend], type[<capability>],
...]``: mypy --strict (tests/test_types.py) checks the class against each protocol named
there, and tests/reconciler/test_backend_protocols.py that the names are exactly the
capabilities the class has."""


class Backend(Protocol):
    name: str

    def compile_options(self, jobs: Sequence[Job], base: CompileOptions) -> CompileOptions:
        """What the artifacts must be compiled for, read from live state (the Trainer API
        version a cluster serves); ``base`` unchanged when nothing live matters."""
        ...

    def plan(self, desired: Sequence[Desired]) -> Plan:
        """Read live state and decide create/update/replace/delete/no-op per resource."""
        ...

    def plan_destroy(self, desired: Sequence[Desired]) -> Plan:
        """Delete everything these specs own."""
        ...

    stale_words: StaleWords
    """How a stale plan names what changed (``engine.check_fresh``)."""

    def read_digests(self, plan: Plan) -> dict[str, str]:
        """For each address of ``plan.read_digests`` this backend reads again, the digest of
        what is there now, as its plan digested it (``ABSENT``: nothing)."""
        ...

    def holding(self, plan: Plan, reporter: Reporter) -> AbstractContextManager[str]:
        """Hold what applying ``plan`` needs held (a lock, leases) while the engine checks
        the plan is fresh and ``act`` runs; gives a note said after a stale plan's message
        (empty, or who held the lock meanwhile)."""
        ...

    def act(self, plan: Plan, reporter: Reporter) -> ApplyResult:
        """Make exactly ``plan``'s changes; only ``engine.apply`` calls it, inside
        ``holding`` once the plan is found fresh."""
        ...

    def status(self, desired: Desired) -> list[Status]:
        ...

    def wait(self, desired: Desired, reporter: Reporter, timeout_s: float | None = None
             ) -> Status:
        """Follow the job to a terminal phase, reporting progress."""
        ...

    def logs(self, desired: Desired, *, follow: bool = False, tail: int | None = None,
             selector: str | None = None) -> Iterator[str]:
        """The job's log lines; ``follow``: until the job ends. ``selector``: a label
        selector narrowing a Kubernetes job's pods (one rank); other backends refuse it."""
        ...
