"""Saved plans: ``plan --out FILE`` writes one; ``apply --plan FILE`` and ``show FILE`` read it.

A saved plan is JSON whose first key is its versioned header, ``"kind": "ftspec-plan"``
followed by ``"format_version"``: ``show`` recognises a plan by that content, under any
file name (``tfplan``, ``lr.plan``, ``plan.json``), and ``apply`` refuses such a file where
a spec goes (a plan is applied only when named with ``--plan``). Besides
``Plan.to_json()`` it holds the inputs it was made from (``Plan.inputs``: the spec files,
overlays, ``--set`` values and namespace), the ftspec version that made it, and a checksum
of its own content.

Saved plans are untrusted input (a file anyone may have edited or truncated): read bounded,
without following a link, parsed within limits (nesting depth, number size:
``spec.jsonlimits``) and validated field by field before anything uses them, each error
naming its field (``changes[3].after: expected an object or null``); one address twice is
refused. The checksum is mandatory, and a plan changed after it was saved is refused; but
it is a plain SHA-256 anyone can recompute, so it only catches accidents. The defence
against an edited plan is ``reconciler.bound``: the plan's specs are compiled and planned
again, and only a saved plan equal to that plan is applied (the plan just computed).

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
from ftspec.reconciler.backends import BACKENDS as BACKEND_MODULES
from ftspec.reconciler.model import PLAN_FORMAT_VERSION, Action, Change, FieldChange, Plan

PLAN_KIND = "ftspec-plan"
READABLE_VERSIONS = (1, PLAN_FORMAT_VERSION)
BACKENDS = tuple(BACKEND_MODULES)
MAX_PLAN_BYTES = 64 << 20
MAX_DEPTH = 64
"""Nesting a saved plan may have: its objects' own (a TrainJob's ~15 levels) and the plan's."""
_HINT = ("make the plan again with `ftspec plan --out FILE`; a saved plan is not meant to "
         "be edited")


def _checksum(body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def plan_document(plan: Plan, *, estimate: dict[str, Any] | None = None) -> dict[str, Any]:
    """The saved form: header first, then the plan, who made it, and its checksum;
    ``estimate`` (``plan --json``: the predicted time and cost) under the checksum too."""
    from ftspec.reconciler.applied import ftspec_version

    body = plan.to_json()
    body.pop("format_version", None)
    meta = {"ftspec": ftspec_version(), "created_at": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    doc: dict[str, Any] = {"kind": PLAN_KIND, "format_version": plan.format_version,
                           "made_by": meta, **body}
    if estimate is not None:
        doc["estimate"] = estimate
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
    """A field that is not what a saved plan holds, named by its place in the document
    (``changes[3].after``)."""


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise _Invalid(f"{where}: {what}")


def _key(raw: dict[str, Any], key: str, where: str) -> Any:
    _need(key in raw, where, f"missing key {key!r}")
    return raw[key]


def _str_map(value: Any, where: str) -> dict[str, str]:
    _need(isinstance(value, dict), where, "expected an object")
    for key, item in value.items():
        _need(isinstance(item, str), f"{where}.{key}", "expected a string")
    return dict(value)


def _str_list(value: Any, where: str) -> list[str]:
    _need(isinstance(value, list), where, "expected a list")
    for i, item in enumerate(value):
        _need(isinstance(item, str), f"{where}[{i}]", "expected a string")
    return list(value)


def _opt_str(value: Any, where: str) -> str | None:
    _need(value is None or isinstance(value, str), where, "expected a string or null")
    return value if isinstance(value, str) else None


def _opt_object(value: Any, where: str) -> dict[str, Any] | None:
    _need(value is None or isinstance(value, dict), where, "expected an object or null")
    return value if isinstance(value, dict) else None


def _bool(value: Any, where: str) -> bool:
    _need(isinstance(value, bool), where, "expected true or false")
    return bool(value)


def _field(raw: Any, where: str) -> FieldChange:
    _need(isinstance(raw, dict), where, "expected an object")
    path = _key(raw, "path", where)
    _need(isinstance(path, str), f"{where}.path", "expected a string")
    return FieldChange(path, raw.get("before"), raw.get("after"),
                       _bool(raw.get("forces_replace", False), f"{where}.forces_replace"))


def _change(raw: Any, where: str) -> Change:
    _need(isinstance(raw, dict), where, "expected an object")
    address = _key(raw, "address", where)
    _need(isinstance(address, str) and bool(address), f"{where}.address",
          "expected a non-empty string")
    actions = [a.value for a in Action]
    action = _key(raw, "action", where)
    _need(isinstance(action, str) and action in actions, f"{where}.action",
          f"expected one of {', '.join(actions)}")
    before = _opt_object(_key(raw, "before", where), f"{where}.before")
    after = _opt_object(_key(raw, "after", where), f"{where}.after")
    fields_raw = raw.get("fields", [])
    _need(isinstance(fields_raw, list), f"{where}.fields", "expected a list")
    return Change(
        address=address, action=Action(action), before=before, after=after,
        reason=_opt_str(raw.get("reason"), f"{where}.reason"),
        fields=tuple(_field(f, f"{where}.fields[{i}]") for i, f in enumerate(fields_raw)),
        ml_changes=tuple(_str_list(raw.get("ml_changes", []), f"{where}.ml_changes")),
        drift=_bool(raw.get("drift", False), f"{where}.drift"),
        spec_file=_opt_str(raw.get("spec_file"), f"{where}.spec_file"),
        upgrade=_opt_str(raw.get("upgrade"), f"{where}.upgrade"),
        moved_from=_opt_str(raw.get("moved_from"), f"{where}.moved_from"),
        moved=_opt_str(raw.get("moved"), f"{where}.moved"),
    )


def _unique(changes: tuple[Change, ...]) -> None:
    """Each address once: a plan changes each object (runs each job) at most once."""
    first: dict[str, int] = {}
    for i, change in enumerate(changes):
        if change.address in first:
            raise _Invalid(f"changes[{i}].address: {change.address!r} is also the address of "
                           f"changes[{first[change.address]}]; a plan changes each object once")
        first[change.address] = i


def _inputs(raw: Any) -> dict[str, Any]:
    _need(isinstance(raw, dict), "inputs", "expected an object")
    if not raw:
        return {}
    out: dict[str, Any] = {}
    for key in ("specs", "overlays", "sets"):
        out[key] = _str_list(raw.get(key, []), f"inputs.{key}")
    if "replace" in raw:  # the addresses run again by request (plans of ftspec 0.1 on)
        out["replace"] = _str_list(raw["replace"], "inputs.replace")
    out["namespace"] = _opt_str(raw.get("namespace"), "inputs.namespace")
    return out


def plan_from_json(data: Any) -> Plan:
    """The Plan in a saved document, every field checked and the checksum verified
    (``BackendError`` names the first field that is wrong: ``changes[3].after: expected
    an object or null``)."""
    try:
        return _plan_from_json(data)
    except _Invalid as exc:
        raise BackendError(str(exc), hint=_HINT) from None


def _plan_from_json(data: Any) -> Plan:
    _need(isinstance(data, dict), "the document", "expected a JSON object")
    version = data.get("format_version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise BackendError(
            f"saved plan has format_version {version!r}; this ftspec reads "
            f"{', '.join(map(str, READABLE_VERSIONS))}",
            hint="re-run `ftspec plan --out` with this version of ftspec")
    backend = _key(data, "backend", "the document")
    _need(isinstance(backend, str) and backend in BACKENDS, "backend",
          f"expected one of {', '.join(BACKENDS)}")
    changes_raw = _key(data, "changes", "the document")
    _need(isinstance(changes_raw, list), "changes", "expected a list")
    changes = tuple(_change(raw, f"changes[{i}]") for i, raw in enumerate(changes_raw))
    _unique(changes)
    plan = Plan(
        backend=backend, changes=changes,
        read_digests=_str_map(data.get("read_digests", {}), "read_digests"),
        specs=_str_map(data.get("specs", {}), "specs"),
        warnings=tuple(_str_list(data.get("warnings", []), "warnings")),
        inputs=_inputs(data.get("inputs", {})), format_version=PLAN_FORMAT_VERSION,
    )
    checksum = _key(data, "checksum", "the document")
    body = {k: v for k, v in data.items() if k != "checksum"}
    _need(checksum == _checksum(body), "checksum", "the plan was changed after it was saved")
    return plan


def load_document(path: Path) -> dict[str, Any]:
    """The saved plan's JSON document, checked (``BackendError`` for anything else, its
    message starting with the file: ``plan.json: changes[3].after: expected an object``)."""
    from ftspec.spec.jsonlimits import loads_limited

    try:
        data = loads_limited(_read(path), max_depth=MAX_DEPTH)
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
