"""The CRD rules' verdict on one object, kept between runs (``crd_check.CrdRules``).

Checking a changed object against its CRD's CEL rules builds cel-python's parser (about a
second of each process that checks one); planning the same change again (``plan``, then
``plan --out``, then ``apply``, which plans again) gives the same verdict. The verdict is
a function of what ``compiler.crd_rules.check`` reads, and the key is the SHA-256 of all
of it: the schema of the object's version, the object and the live one as the rules see
them (``crd_rules.root_view``; of the live one, only the fields the object sets, unless a
rule at the root reads ``oldSelf``: ``live_view``), and the evaluator (the
source of ftspec's rule walk, budget and this check, the installed cel-python and lark).
Any difference is a miss. A verdict that holds a rule not evaluated is not kept: the
budget counts time, so on a loaded machine a rule may not finish that would another time.

Entries are in ``$FTSPEC_CACHE_DIR/cel`` (``compiler.cache.folder``), written and read as
the input digests' are (``compiler.cache_files``: private files in folders nobody else may
write, opened without following links); an entry is data (JSON: the digest of its key and
the violations), checked for shape, and any trouble is a miss, never an error.
``FTSPEC_CEL_CACHE=off`` checks every object anew.

Our own code: no library keeps results keyed by their inputs in a folder safe from other
users; the key's parts are this check's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

from ftspec.compiler.crd_rules import Violation, is_transition, root_view, schema_of

FORMAT = 1
"""Bumped when what an entry holds changes shape."""
SUFFIX = ".cel.json"
NOT_EVALUATED = "rule not evaluated"
"""How ``crd_rules`` begins the message of a rule it could not evaluate."""

Verdict = tuple[list[Violation], list[Violation]]
"""(rules broken on create, transition rules broken by the update from the live object)."""


def enabled() -> bool:
    return os.environ.get("FTSPEC_CEL_CACHE", "").lower() not in ("off", "0", "false", "no")


@cache
def evaluator() -> str:
    """What the verdict is computed by: the source of the modules that check, cel-python's
    and lark's files as installed (path, size, modification time)."""
    from ftspec.compiler import cel_budget, crd_rules
    from ftspec.reconciler.kubernetes import crd_check

    parts: list[Any] = [sys.version]
    for module in (crd_rules, cel_budget, crd_check, sys.modules[__name__]):
        parts.append(hashlib.sha256(Path(str(module.__file__)).read_bytes()).hexdigest())
    for name in ("celpy", "lark"):
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        st = os.stat(origin) if origin else None
        parts.append([origin, st.st_size if st else None, st.st_mtime_ns if st else None])
    return json.dumps(parts)


def schema_digest(crd: dict[str, Any]) -> str:
    """The digest of everything in ``crd`` its rules are (its versions' schemas)."""
    versions = (crd.get("spec") or {}).get("versions") or []
    return hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()


def key_of(crd: dict[str, Any], schema: str, obj: dict[str, Any],
           live: dict[str, Any] | None) -> str:
    """The key of ``obj``'s verdict under ``crd`` (``schema``: the digest of its schemas;
    ``live``: the object it updates, or None)."""
    text = json.dumps([FORMAT, evaluator(), schema, root_view(obj),
                       None if live is None else live_view(crd, obj, live)], sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def live_view(crd: dict[str, Any], obj: dict[str, Any], live: dict[str, Any]) -> Any:
    """What checking ``obj`` reads of ``live``: what the rules at the root see of it, less
    the fields ``obj`` does not set (its status, which the controller keeps changing),
    unless a rule at the root reads ``oldSelf``. The check enters only the fields the
    object sets, and only a transition rule sees ``oldSelf``."""
    seen = root_view(live)
    schema = schema_of(crd, str(obj.get("apiVersion", "")).rpartition("/")[2]) or {}
    rules = schema.get("x-kubernetes-validations")
    if not isinstance(seen, dict) or (isinstance(rules, list) and any(
            isinstance(r, dict) and is_transition(str(r.get("rule", ""))) for r in rules)):
        return seen
    return {key: value for key, value in seen.items() if key in obj}


def _folder() -> Path | None:
    from ftspec.compiler import cache

    return cache.folder("cel") if enabled() else None


def recall(key: str) -> Verdict | None:
    """The verdict kept under ``key``; None when there is none (or it is not usable)."""
    from ftspec.compiler import cache_files

    entry = cache_files.read_json_entry(_folder(), key + SUFFIX)
    if entry is None or entry.get("key") != key:
        return None
    fresh, moved = _violations(entry.get("fresh")), _violations(entry.get("moved"))
    return None if fresh is None or moved is None else (fresh, moved)


def keep(key: str, verdict: Verdict) -> None:
    """Keep ``verdict`` under ``key``, unless a rule in it was not evaluated."""
    from ftspec.compiler import cache_files

    if any(v.message.startswith(NOT_EVALUATED) for part in verdict for v in part):
        return
    folder = _folder()
    where = None if folder is None else cache_files.safe_folder(folder, create=True)
    if where is None:
        return
    fresh, moved = ([[list(v.path), v.message, v.rule] for v in part] for part in verdict)
    data = json.dumps({"key": key, "fresh": fresh, "moved": moved}).encode()
    try:
        cache_files.write_new(where, key + SUFFIX, data)
        cache_files.prune(where, (SUFFIX,))
    except OSError:  # a cache that cannot write is only slower
        return


def _violations(data: Any) -> list[Violation] | None:
    """Violations as an entry holds them; None for anything of another shape."""
    if not isinstance(data, list):
        return None
    out = []
    for item in data:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], list)
                and isinstance(item[1], str) and isinstance(item[2], str)
                and all(isinstance(p, (str, int)) and not isinstance(p, bool)
                        for p in item[0])):
            return None
        out.append(Violation(tuple(item[0]), item[1], item[2]))
    return out
