"""Saved plans: ``plan --out FILE`` writes ``Plan.to_json()``; ``apply FILE`` reads it back.

The file carries ``format_version`` and the digests of every live object the plan read;
the backend refuses to apply it when any of them changed (``StalePlanError``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.model import PLAN_FORMAT_VERSION, Action, Change, FieldChange, Plan

PLAN_KIND = "ftspec-plan"


def plan_document(plan: Plan) -> dict[str, Any]:
    return {"kind": PLAN_KIND, **plan.to_json()}


def save_plan(plan: Plan, path: Path) -> None:
    path.write_text(json.dumps(plan_document(plan), indent=2, sort_keys=True) + "\n",
                    encoding="utf-8")


def is_saved_plan(path: Path) -> bool:
    """A JSON file written by ``plan --out`` (specs are YAML, so JSON that parses as a plan)."""
    if path.suffix != ".json":
        return False
    try:
        data = json.loads(_read(path))
    except (BackendError, ValueError):
        return False
    return isinstance(data, dict) and (data.get("kind") == PLAN_KIND or "format_version" in data)


def plan_from_json(data: dict[str, Any]) -> Plan:
    version = data.get("format_version")
    if version != PLAN_FORMAT_VERSION:
        raise BackendError(
            f"saved plan has format_version {version!r}; this ftspec reads {PLAN_FORMAT_VERSION}",
            hint="re-run `ftspec plan --out` with this version of ftspec",
        )
    changes = []
    for raw in data.get("changes", []):
        fields = tuple(FieldChange(f["path"], f.get("before"), f.get("after"),
                                   bool(f.get("forces_replace"))) for f in raw.get("fields", []))
        changes.append(Change(
            address=raw["address"], action=Action(raw["action"]), before=raw.get("before"),
            after=raw.get("after"), reason=raw.get("reason"), fields=fields,
            ml_changes=tuple(raw.get("ml_changes", ())), drift=bool(raw.get("drift")),
            spec_file=raw.get("spec_file"),
        ))
    return Plan(
        backend=data["backend"], changes=tuple(changes),
        read_digests=dict(data.get("read_digests", {})), specs=dict(data.get("specs", {})),
        warnings=tuple(data.get("warnings", ())), format_version=version,
    )


MAX_PLAN_BYTES = 64 << 20


def _read(path: Path) -> str:
    from ftspec.spec.bounded import InputRefused, read_bounded

    try:
        return read_bounded(path, MAX_PLAN_BYTES, "saved plan").decode("utf-8")
    except InputRefused as exc:
        raise BackendError(f"{path}: {exc.message}") from None
    except UnicodeDecodeError:
        raise BackendError(f"{path} is not a saved ftspec plan (not UTF-8)") from None


def load_plan(path: Path) -> Plan:
    try:
        data = json.loads(_read(path))
    except ValueError as exc:
        raise BackendError(f"cannot read saved plan {path}: {exc}") from None
    if not isinstance(data, dict) or "changes" not in data:
        raise BackendError(f"{path} is not a saved ftspec plan")
    try:
        return plan_from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BackendError(f"{path} is not a valid saved ftspec plan ({type(exc).__name__} "
                           "in its content); save it again with `ftspec plan --out`") from None
