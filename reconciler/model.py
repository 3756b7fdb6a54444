"""Reconciler data: Action -> Change -> Plan -> ApplyResult, and the common Status.

Pure data (no I/O). The human plan is rendered from ``Plan.to_json()`` so the two views
cannot disagree.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ftspec.reconciler.applied import AppliedRecord
    from ftspec.reconciler.inputs import InputState
    from ftspec.spec.ir import Job

PLAN_FORMAT_VERSION = 2
"""2: ``inputs`` and ``Change.upgrade`` (plans of version 1 are still read)."""


class Action(str, Enum):
    NOOP = "no-op"
    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"
    DELETE = "delete"


class Phase(str, Enum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class FieldChange:
    path: str
    """Raw field path, e.g. ``spec.trainer.args[3]``."""
    before: Any
    after: Any
    forces_replace: bool = False


@dataclass(frozen=True)
class Change:
    address: str
    """Backend-qualified resource address, e.g. ``kubeflow.TrainJob.ml/llama-lora``."""
    action: Action
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    reason: str | None = None
    """Why: the immutable field forcing a replace, drift, orphan of a renamed spec, …"""
    fields: tuple[FieldChange, ...] = ()
    ml_changes: tuple[str, ...] = ()
    """The same change in ML terms: ``learning rate 2e-4 -> 1e-4``, ``GPUs 8 -> 16``."""
    drift: bool = False
    """Live was changed outside ftspec since the last apply."""
    spec_file: str | None = None
    upgrade: str | None = None
    """Set when the spec as written is the one applied, yet what would run differs: the
    change comes from a new ftspec (``ftspec.reconciler.applied.upgrade_note``)."""
    moved_from: str | None = None
    """The address the run had (a renamed spec file, an id changed by the ftspec upgrade:
    ``reconciler.identity``); ``moved`` says why. A move alone changes no run: the plan
    still says "No changes", and apply re-records the run under its new identity."""
    moved: str | None = None


@dataclass(frozen=True)
class Summaries:
    """A run in ML terms (``compiler.summary.ml_summary``) as applied and as desired."""

    applied: dict[str, str]
    desired: dict[str, str]


@dataclass(frozen=True)
class Reads:
    """What a job reads (``reconciler.inputs``), as the applied run's record keeps it (None:
    no record) and as the job reads it now: ``engine.settled`` compares the two."""

    applied: Mapping[str, InputState] | None
    desired: tuple[InputState, ...]


@dataclass(frozen=True)
class Upgrading:
    """What ``applied.upgrade_note`` reads of a change of what would run: the applied
    run's record (None: none), the job planned (or its record), and whether an ftspec that
    kept no record applied it."""

    record: AppliedRecord | None
    now: Job | AppliedRecord
    legacy: bool = False


@dataclass(frozen=True)
class Replacing:
    """The replace a backend plans for an applied run when the engine finds the run's inputs
    changed: ``change``, whose reason is what follows the why (``: Ray jobs are immutable,
    ...``); ``why``: what would run changed (its fields), None where only the inputs do
    (then the inputs' reason says why)."""

    change: Planned
    why: str | None = None


@dataclass(frozen=True)
class Planned(Change):
    """A change as a backend's plan hands it to the engine, decided on what would run only.
    ``engine.settled`` makes it the plain ``Change`` a plan shows and saves: a replace where
    the run's inputs changed (``reads``: the content the applied run read and the content
    now; ``replacing``: how the backend replaces the run, asked only then (a local replace
    reads the run's kept generations), None: this change made a replace, the inputs' reason
    after its own), then, where it updates or replaces the run, its ML
    lines (``summaries``: the run in ML terms as applied and as desired) and its upgrade
    note (``upgrading``)."""

    summaries: Summaries | None = None
    reads: Reads | None = None
    upgrading: Upgrading | None = None
    replacing: Callable[[], Replacing] | None = None

    @classmethod
    def of(cls, change: Change, summaries: Summaries | None = None, reads: Reads | None = None,
           upgrading: Upgrading | None = None, replacing: Callable[[], Replacing] | None = None
           ) -> Planned:
        return cls(**_change_fields(change), summaries=summaries, reads=reads,
                   upgrading=upgrading, replacing=replacing)

    def plain(self, ml_changes: tuple[str, ...], upgrade: str | None = None) -> Change:
        """This change as a plain ``Change``, saying ``ml_changes`` (and ``upgrade``, where
        given)."""
        return Change(**{**_change_fields(self), "ml_changes": ml_changes,
                         "upgrade": upgrade or self.upgrade})


def _change_fields(change: Change) -> dict[str, Any]:
    return {f.name: getattr(change, f.name) for f in fields(Change)}


@dataclass(frozen=True)
class Plan:
    backend: str
    changes: tuple[Change, ...]
    read_digests: dict[str, str] = field(default_factory=dict)
    """address -> digest of the live object read; apply refuses a stale plan."""
    specs: dict[str, str] = field(default_factory=dict)
    """spec file -> digest of the spec as written (``Job.written``) planned."""
    warnings: tuple[str, ...] = ()
    inputs: dict[str, Any] = field(default_factory=dict)
    """What the plan was made from (``specs``, ``overlays``, ``sets``, ``namespace``,
    ``replace``: the addresses run again by request): what
    ``apply --plan FILE`` compiles again to bind the plan to its specs (``reconciler.bound``).
    Set by the CLI."""
    format_version: int = PLAN_FORMAT_VERSION

    @property
    def has_changes(self) -> bool:
        return any(c.action is not Action.NOOP for c in self.changes)

    def counts(self) -> dict[str, int]:
        out = {a.value: 0 for a in Action}
        for change in self.changes:
            out[change.action.value] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = _plain(self)
        for change in data["changes"]:
            change["action"] = change["action"].value
        return data


_JSON_ATOMS = frozenset({str, int, float, bool, type(None)})
_ATOMS = (str, int, float, bool, type(None), Enum)


def _plain(value: Any) -> Any:
    """What ``dataclasses.asdict`` gives for plan data (dataclasses to dicts, containers
    copied), without its deep copy of every string and number: those are immutable. A
    plan's objects are mostly JSON, so JSON's own types are told by ``type`` first."""
    kind = type(value)
    if kind in _JSON_ATOMS:
        return value
    if kind is dict:
        return {k if type(k) is str else _plain(k): _plain(v) for k, v in value.items()}
    if kind is list:
        return [_plain(v) for v in value]
    if kind is tuple:
        return tuple(_plain(v) for v in value)
    if isinstance(value, _ATOMS):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return copy.deepcopy(value)


@dataclass(frozen=True)
class ApplyResult:
    applied: tuple[Change, ...]
    failed: tuple[tuple[str, str], ...] = ()
    """(address, message) for changes that did not go through."""

    @property
    def ok(self) -> bool:
        return not self.failed


@dataclass(frozen=True)
class Status:
    address: str
    phase: Phase
    message: str = ""
    platform: dict[str, Any] = field(default_factory=dict)
    """The platform's own status, untranslated (conditions, jobStatus, exit code…)."""
    metrics: dict[str, Any] = field(default_factory=dict)
    """e.g. step, total_steps, loss, curve, lr, elapsed_s, seconds_left, final_loss when
    the backend can read them (``progress.Tracker.summary``)."""
    outputs: dict[str, Any] = field(default_factory=dict)
    """Where the run writes (``outputs.location``) and, where this machine can see the
    folder, what is there (``outputs.scan``)."""
    reason: dict[str, Any] = field(default_factory=dict)
    """Why a failed run failed (``failure.reason``): validity, exit code or signal, out of
    memory, the trainer's last exception, the platform's own words. Empty otherwise."""
