"""A saved plan bound to its inputs: what ``apply --plan FILE`` may do, for every backend.

A saved plan is a file passed between CI jobs, so it is untrusted: its checksum is a plain
SHA-256 of its own content, which anyone who edits the file can recompute. The checksum
(mandatory, ``reconciler.saved``) catches accidents — a truncated or hand-edited file —
but it is no defence against an edit made on purpose. The defence is here: a saved plan
is only a *claim* about what its specs do, and ``bind`` checks the claim against the specs
themselves before anything is applied:

1. the plan must name its inputs (the spec files, overlays, ``--set`` values and
   namespace it was made from: ``Plan.inputs``); they are read and compiled again through
   the one compile path (``reconciler.desired.prepare``), with the backend the specs
   choose now, which must be the plan's;
2. each spec's digest as written (``Job.written``) must be the one recorded in the plan
   (``Plan.specs``): a spec edited since is a stale plan, named in one line;
3. the backend plans the compiled specs against the live state (``Backend.plan``), and the
   saved plan must be exactly that plan: the same live objects read at the same versions
   (``read_digests``), the same addresses, each with the same action, the same object
   ``after`` (what would be created or sent: for a local run its argv and environment, for
   Ray the dashboard address and entrypoint, for Kubernetes the whole manifest, kind,
   name and namespace included) and the same move. A delete is planned only for an object
   ftspec owns for these specs (the backends' own ownership rules), so a saved delete of
   anything else finds no match.

What is applied is then the plan just computed, not the file: no byte of a saved plan's
``after`` or ``before`` reaches a backend, so a plan file can never make ftspec do what no
spec produces. The saved plan's descriptive fields (reasons, field diffs, ML lines) are
display only and are not compared. As in Terraform, a bound plan is applied without a
confirmation prompt (it was reviewed when it was made) and a stale one is refused
("Saved plan is stale: ..."), with nothing changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ftspec.reconciler import engine
from ftspec.reconciler.backend import Backend, BackendError, Desired, StalePlanError, StaleWords
from ftspec.reconciler.backends import BackendOptions
from ftspec.reconciler.model import Change, Plan
from ftspec.spec.diagnostics import Diagnostic

_READ = StaleWords("{address}", versions=True)
_AGAIN = "make the plan again with `ftspec plan SPEC --out FILE` and apply the new one"


class SpecsFailed(StalePlanError):
    """The plan's specs do not compile now; ``diagnostics`` says where."""

    def __init__(self, message: str, diagnostics: list[Diagnostic]) -> None:
        super().__init__(message, hint=_AGAIN)
        self.diagnostics = diagnostics


@dataclass(frozen=True)
class Bound:
    """A saved plan checked against its specs: the backend, the plan to apply (computed
    now, equal to the saved one) and the specs' desired states (to follow with --wait)."""

    backend: Backend
    plan: Plan
    desired: tuple[Desired, ...]


def _stale(message: str) -> StalePlanError:
    return StalePlanError(f"Saved plan is stale: {message}; nothing was changed", hint=_AGAIN)


def _mismatch(message: str) -> StalePlanError:
    return StalePlanError(f"Saved plan does not match what its specs compile to now: {message}; "
                          "nothing was changed", hint=_AGAIN)


def compile_inputs(saved: Plan, options: BackendOptions) -> tuple[Backend, tuple[Desired, ...]]:
    """The saved plan's specs read and compiled again (step 1)."""
    from ftspec.compiler.pipeline import SpecInput
    from ftspec.reconciler.desired import prepare, with_namespace

    inputs = saved.inputs
    if not inputs.get("specs"):
        raise BackendError("this saved plan does not name the spec files it was made from "
                           "(made by an older ftspec), so it cannot be checked against them",
                           hint=_AGAIN)
    sets = with_namespace(tuple(inputs.get("sets") or ()), inputs.get("namespace"))
    overlays = tuple(Path(p) for p in inputs.get("overlays") or ())
    prepared = prepare([SpecInput(Path(p), overlays, sets) for p in inputs["specs"]], options)
    if not prepared.ok or prepared.backend is None:
        named = ", ".join(inputs["specs"])
        raise SpecsFailed(f"Saved plan is stale: its specs ({named}) do not compile now; "
                          "nothing was changed", list(prepared.diagnostics))
    if prepared.backend.name != saved.backend:
        raise _stale(f"its specs now deploy with the {prepared.backend.name} backend, not "
                     f"{saved.backend}")
    return prepared.backend, prepared.desired


def check_specs(saved: Plan, desired: tuple[Desired, ...]) -> None:
    """Each spec the plan recorded is compiled now with the digest recorded (step 2)."""
    now: dict[Path, str] = {}
    for d in desired:  # as Backend.plan records them: the last job of a file wins
        now[Path(d.spec_file).resolve()] = d.job.written
    for spec_file, digest in saved.specs.items():
        current = now.get(Path(spec_file).resolve())
        if current is None:
            raise _stale(f"spec {spec_file} is not among the specs compiled from the plan's "
                         "inputs (apply the plan from the directory it was made in)")
        if current != digest:
            raise _stale(f"spec {spec_file} changed since the plan was made")
    if not saved.specs:
        raise _stale("the plan records no spec digests")


def _at(path: str, key: object) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


def first_difference(a: Any, b: Any, path: str) -> str | None:
    """The first place where two JSON values differ (``after.argv[2]``), or None."""
    if type(a) is not type(b):
        return path
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return _at(path, key)
            found = first_difference(a[key], b[key], _at(path, key))
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, _at(path, i))
            if found:
                return found
        return None if len(a) == len(b) else _at(path, min(len(a), len(b)))
    return None if a == b else path


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _what(change: Change) -> str:
    return f"{change.address} ({change.action.value})"


def compare(saved: Plan, fresh: Plan) -> None:
    """Refuse (``StalePlanError``) unless ``saved`` is exactly ``fresh`` (step 3)."""
    # an address only one side read is left to the comparison of its change below
    stale = engine.stale_reads(dict(sorted(saved.read_digests.items())), fresh.read_digests)
    if stale:
        raise _stale(_READ.said(*stale[0]))
    planned = {c.address: c for c in fresh.changes}
    for i, change in enumerate(saved.changes):
        ours = planned.get(change.address)
        where = f"changes[{i}] {_what(change)}"
        if ours is None:
            raise _mismatch(f"{where}: its specs plan no change of {change.address}")
        if ours.action is not change.action:
            raise _mismatch(f"{where}: its specs plan {ours.action.value}")
        if ours.moved_from != change.moved_from:
            raise _mismatch(f"{where}: its specs plan the move from {ours.moved_from!r}")
        if _canonical(ours.after) != _canonical(change.after):
            path = first_difference(change.after, ours.after, "after") or "after"
            raise _mismatch(f"{where}: {path} differs")
    listed = {c.address for c in saved.changes}
    missing = [c for c in fresh.changes if c.address not in listed]
    if missing:
        raise _mismatch(f"its specs also plan {_what(missing[0])}, which the plan does not "
                        "list")


def bind(saved: Plan, options: BackendOptions) -> Bound:
    """The plan to apply for ``saved``: its specs compiled and planned now, and ``saved``
    found equal to that plan; ``StalePlanError`` (one line saying what differs) otherwise."""
    backend, desired = compile_inputs(saved, options)
    check_specs(saved, desired)
    fresh = engine.plan(backend, desired, tuple(saved.inputs.get("replace") or ()))
    compare(saved, fresh)
    return Bound(backend, replace(fresh, inputs=saved.inputs), desired)
