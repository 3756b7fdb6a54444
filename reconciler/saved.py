"""Saved plans: ``plan --out FILE`` writes one; ``apply FILE`` and ``show FILE`` read it back.

A saved plan is JSON whose first key is its versioned header, ``"kind": "ftspec-plan"``
followed by ``"format_version"``: ``apply`` recognises a plan by that content, under any
file name (``tfplan``, ``lr.plan``, ``plan.json``). Besides ``Plan.to_json()`` it holds
what ``apply PLAN --wait`` needs to follow the jobs (``Plan.inputs``: the spec files,
overlays, ``--set`` values and namespace the plan was made from), the ftspec version that
made it, and a checksum of its own content.

Saved plans are untrusted input (a file anyone may have edited or truncated): read bounded,
without following a link, and validated field by field before anything uses them; a plan
changed after it was saved (the checksum no longer matches) is refused. The backend then
refuses to apply a plan whose inputs changed since (``StalePlanError``, naming them).

Written private (0600) and atomically: a temporary file created next to the target with
``O_CREAT | O_EXCL | O_NOFOLLOW`` (a planted link or file is never written through), then
renamed over the target (which replaces a link at that name, never its target). The few
lines are ours: the project's link-safe file helpers are not shared with this module yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.model import PLAN_FORMAT_VERSION, Action, Change, FieldChange, Plan

PLAN_KIND = "ftspec-plan"
READABLE_VERSIONS = (1, PLAN_FORMAT_VERSION)
BACKENDS = ("kubernetes", "ray", "local")
MAX_PLAN_BYTES = 64 << 20
_HINT = ("make the plan again with `ftspec plan --out FILE`; a saved plan is not meant to "
         "be edited")


def _checksum(body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def plan_document(plan: Plan) -> dict[str, Any]:
    """The saved form: header first, then the plan, who made it, and its checksum."""
    from ftspec.reconciler.applied import ftspec_version

    body = plan.to_json()
    body.pop("format_version", None)
    meta = {"ftspec": ftspec_version(), "created_at": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    doc: dict[str, Any] = {"kind": PLAN_KIND, "format_version": plan.format_version,
                           "made_by": meta, **body}
    doc["checksum"] = _checksum(doc)
    return doc


def save_plan(plan: Plan, path: Path) -> None:
    """Write ``plan`` to ``path`` (mode 0600, atomically, following no link)."""
    text = json.dumps(plan_document(plan), indent=2, ensure_ascii=False) + "\n"
    folder = path.parent if str(path.parent) else Path(".")
    for attempt in range(100):
        tmp = folder / f".{path.name}.{os.getpid()}.{attempt}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileExistsError:
            continue
        break
    else:
        raise OSError(f"could not create a temporary file in {folder}")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _read(path: Path) -> str:
    from ftspec.spec.bounded import InputRefused, read_bounded

    try:
        return read_bounded(path, MAX_PLAN_BYTES, "saved plan").decode("utf-8")
    except InputRefused as exc:
        raise BackendError(f"{path}: {exc.message}") from None
    except UnicodeDecodeError:
        raise BackendError(f"{path} is not a saved ftspec plan (not UTF-8)") from None


def _head(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, 256)
    finally:
        os.close(fd)


def is_saved_plan(path: Path) -> bool:
    """Whether ``path`` holds a saved plan: its content starts with the plan header
    (``{"kind": "ftspec-plan"``), whatever the file is called."""
    head = _head(path).lstrip().decode("utf-8", errors="replace")
    if not head.startswith("{"):
        return False
    compact = "".join(head[1:].split())
    return compact.startswith(f'"kind":"{PLAN_KIND}"')


# ---------------------------------------------------------------------------- validation


class _Invalid(Exception):
    pass


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise _Invalid(f"{where}: {what}")


def _str_map(value: Any, where: str) -> dict[str, str]:
    _need(isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str)
                                          for k, v in value.items()), where,
          "must map strings to strings")
    return dict(value)


def _str_list(value: Any, where: str) -> list[str]:
    _need(isinstance(value, list) and all(isinstance(v, str) for v in value), where,
          "must be a list of strings")
    return list(value)


def _opt_str(value: Any, where: str) -> str | None:
    _need(value is None or isinstance(value, str), where, "must be a string or null")
    return value if isinstance(value, str) else None


def _change(raw: Any, where: str) -> Change:
    _need(isinstance(raw, dict), where, "must be an object")
    address = raw.get("address")
    _need(isinstance(address, str) and bool(address), f"{where}.address",
          "must be a non-empty string")
    actions = [a.value for a in Action]
    _need(raw.get("action") in actions, f"{where}.action", f"must be one of {actions}")
    for side in ("before", "after"):
        _need(raw.get(side) is None or isinstance(raw.get(side), dict), f"{where}.{side}",
              "must be an object or null")
    fields_raw = raw.get("fields", [])
    _need(isinstance(fields_raw, list), f"{where}.fields", "must be a list")
    fields = []
    for i, f in enumerate(fields_raw):
        at = f"{where}.fields[{i}]"
        _need(isinstance(f, dict) and isinstance(f.get("path"), str), at,
              "must be an object with a string path")
        _need(isinstance(f.get("forces_replace", False), bool), f"{at}.forces_replace",
              "must be true or false")
        fields.append(FieldChange(f["path"], f.get("before"), f.get("after"),
                                  bool(f.get("forces_replace"))))
    _need(isinstance(raw.get("drift", False), bool), f"{where}.drift", "must be true or false")
    return Change(
        address=address, action=Action(raw["action"]), before=raw.get("before"),
        after=raw.get("after"), reason=_opt_str(raw.get("reason"), f"{where}.reason"),
        fields=tuple(fields),
        ml_changes=tuple(_str_list(raw.get("ml_changes", []), f"{where}.ml_changes")),
        drift=bool(raw.get("drift")),
        spec_file=_opt_str(raw.get("spec_file"), f"{where}.spec_file"),
        upgrade=_opt_str(raw.get("upgrade"), f"{where}.upgrade"),
        moved_from=_opt_str(raw.get("moved_from"), f"{where}.moved_from"),
        moved=_opt_str(raw.get("moved"), f"{where}.moved"),
    )


def _inputs(raw: Any) -> dict[str, Any]:
    _need(isinstance(raw, dict), "inputs", "must be an object")
    if not raw:
        return {}
    out: dict[str, Any] = {}
    for key in ("specs", "overlays", "sets"):
        out[key] = _str_list(raw.get(key, []), f"inputs.{key}")
    out["namespace"] = _opt_str(raw.get("namespace"), "inputs.namespace")
    return out


def plan_from_json(data: Any) -> Plan:
    """The Plan in a saved document, every field checked (``BackendError`` says where)."""
    try:
        return _plan_from_json(data)
    except _Invalid as exc:
        raise BackendError(f"not a valid saved ftspec plan: {exc}", hint=_HINT) from None


def _plan_from_json(data: Any) -> Plan:
    _need(isinstance(data, dict), "the document", "must be a JSON object")
    version = data.get("format_version")
    if version not in READABLE_VERSIONS:
        raise BackendError(
            f"saved plan has format_version {version!r}; this ftspec reads "
            f"{', '.join(map(str, READABLE_VERSIONS))}",
            hint="re-run `ftspec plan --out` with this version of ftspec")
    if "checksum" in data:
        body = {k: v for k, v in data.items() if k != "checksum"}
        _need(data["checksum"] == _checksum(body), "checksum",
              "the plan was changed after it was saved")
    _need(data.get("backend") in BACKENDS, "backend", f"must be one of {list(BACKENDS)}")
    changes_raw = data.get("changes")
    _need(isinstance(changes_raw, list), "changes", "must be a list")
    changes = tuple(_change(raw, f"changes[{i}]") for i, raw in enumerate(changes_raw))
    return Plan(
        backend=data["backend"], changes=changes,
        read_digests=_str_map(data.get("read_digests", {}), "read_digests"),
        specs=_str_map(data.get("specs", {}), "specs"),
        warnings=tuple(_str_list(data.get("warnings", []), "warnings")),
        inputs=_inputs(data.get("inputs", {})), format_version=PLAN_FORMAT_VERSION,
    )


def load_document(path: Path) -> dict[str, Any]:
    """The saved plan's JSON document, checked (``BackendError`` for anything else)."""
    try:
        data = json.loads(_read(path))
    except ValueError as exc:
        raise BackendError(f"cannot read saved plan {path}: {exc}", hint=_HINT) from None
    if not isinstance(data, dict) or data.get("kind", PLAN_KIND) != PLAN_KIND \
            or "changes" not in data:
        raise BackendError(f"{path} is not a saved ftspec plan", hint=_HINT)
    try:
        plan_from_json(data)
    except BackendError as exc:
        raise BackendError(f"{path}: {exc}", hint=exc.hint) from None
    return data


def load_plan(path: Path) -> Plan:
    return plan_from_json(load_document(path))
