"""A Kubernetes object against the CRD it targets: enums and the CEL ``x-kubernetes-validations``
rules, on create and on update (transition rules see ``oldSelf``).

The CEL expressions are evaluated by ``cel-python`` (``celpy``, the ``kubernetes`` extra),
imported only here and only when a rule is evaluated. The schema walk and the Kubernetes
semantics around it are ours, because no Python library applies a CRD's structural schema
the way kube-apiserver does: a rule runs at the schema node that carries it, for a value
that is present; a rule that names ``oldSelf`` (a transition rule) runs only on update and
only where the old value is correlatable (object properties, ``map`` list items by their
keys; not atomic list items); ``self`` at the root sees ``metadata.name`` and
``generateName`` only. Kubernetes' CEL extension functions beyond the standard library are
not provided; a rule that needs one is reported as not evaluated, never as passed.

Users of `validate` point ``FTSPEC_CRD_DIR`` at the CRD files of their installation
(folders separated by ``os.pathsep``); ``plan`` checks against the live CRD it reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

Path_ = tuple[str | int, ...]
CRD_DIR_ENV = "FTSPEC_CRD_DIR"


@dataclass(frozen=True)
class Violation:
    path: Path_
    """Where in the object (``spec.trainer.numProcPerNode`` as a tuple)."""
    message: str
    rule: str
    """The CEL rule, or ``enum`` for an enum check."""

    @property
    def field(self) -> str:
        out = ""
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else part
        return out


class EvaluatorMissing(RuntimeError):
    """cel-python is not installed."""


def evaluator_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("celpy") is not None


def schema_of(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    """The ``openAPIV3Schema`` of ``version`` in the CRD (None when it serves no such one)."""
    for entry in (crd.get("spec") or {}).get("versions") or []:
        if entry.get("name") == version:
            schema = (entry.get("schema") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, dict) else None
    return None


def check(obj: dict[str, Any], crd: dict[str, Any], old: dict[str, Any] | None = None
          ) -> list[Violation]:
    """Every enum and CEL violation of ``obj`` (``old``: the live object on update)."""
    version = str(obj.get("apiVersion", "")).rpartition("/")[2]
    schema = schema_of(crd, version)
    if schema is None:
        return []
    return list(_walk(schema, obj, old, (), root=True))


def _walk(node: dict[str, Any], value: Any, old: Any, path: Path_, *, root: bool = False
          ) -> Iterator[Violation]:
    if value is None:
        return
    enum = node.get("enum")
    if enum is not None and value not in enum:
        yield Violation(path, f"Unsupported value: {value!r}: supported values: "
                        + ", ".join(repr(v) for v in enum), "enum")
    rules = node.get("x-kubernetes-validations") or []
    if rules:
        seen = _root_view(value) if root else value
        old_seen = _root_view(old) if root and old is not None else old
        for rule in rules:
            yield from _evaluate(rule, seen, old_seen, path)
    if isinstance(value, dict):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        for key, item in value.items():
            child = props.get(key) or (extra if isinstance(extra, dict) else None)
            if child is None or (root and key == "metadata"):
                continue
            old_item = old.get(key) if isinstance(old, dict) else None
            yield from _walk(child, item, old_item, path + (key,))
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        items = node["items"]
        olds = _correlate(node, value, old)
        for i, item in enumerate(value):
            yield from _walk(items, item, olds[i], path + (i,))


def _root_view(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    meta = obj.get("metadata") or {}
    shown = {k: meta[k] for k in ("name", "generateName") if k in meta}
    return {**obj, "metadata": shown}


def _correlate(node: dict[str, Any], value: list[Any], old: Any) -> list[Any]:
    """The old item of each new one: by key in a ``map`` list, none otherwise."""
    if node.get("x-kubernetes-list-type") != "map" or not isinstance(old, list):
        return [None] * len(value)
    keys = node.get("x-kubernetes-list-map-keys") or []

    def key(item: Any) -> tuple[Any, ...] | None:
        return tuple(item.get(k) for k in keys) if isinstance(item, dict) else None

    by_key = {key(o): o for o in old}
    return [by_key.get(key(v)) for v in value]


def _evaluate(rule: dict[str, Any], value: Any, old: Any, path: Path_) -> Iterator[Violation]:
    text = str(rule.get("rule", ""))
    transition = re.search(r"\boldSelf\b", text) is not None
    if transition and old is None and not rule.get("optionalOldSelf"):
        return
    program = _program(text)
    activation = {"self": _to_cel(value)}
    if transition:
        activation["oldSelf"] = _to_cel(old)
    from celpy.evaluation import CELEvalError

    try:
        result = program.evaluate(activation)
    except CELEvalError as exc:
        yield Violation(path, f"rule not evaluated: {exc.args[0] if exc.args else exc}", text)
        return
    if isinstance(result, CELEvalError):
        yield Violation(path, f"rule not evaluated: {result.args[0] if result.args else ''}",
                        text)
    elif result is not True and not (hasattr(result, "__bool__") and bool(result)):
        field = rule.get("fieldPath") or _single_field(text)
        where = path + _field_path(str(field)) if field else path
        yield Violation(where, str(rule.get("message") or f"failed rule: {text}"), text)


def _single_field(text: str) -> str | None:
    """``self.metadata.name`` when every field the rule reads is that one (the rule names no
    ``fieldPath``, but the failure is still that field's)."""
    chains = set()
    for match in re.finditer(r"\bself((?:\.[A-Za-z_][A-Za-z0-9_]*)+)(\()?", text):
        chain = match.group(1)
        if match.group(2):  # self.name.matches(...): the last part is a method
            chain = chain.rpartition(".")[0]
        chains.add(chain)
    return chains.pop() if len(chains) == 1 and "" not in chains else None


def _field_path(text: str) -> Path_:
    parts: list[str | int] = []
    for name, index in re.findall(r"\.([A-Za-z0-9_]+)|\[(\d+)\]", text):
        parts.append(int(index) if index else name)
    return tuple(parts)


@cache
def _program(text: str) -> Any:
    try:
        import celpy
    except ImportError as exc:
        raise EvaluatorMissing("cel-python is not installed") from exc
    env = celpy.Environment()
    return env.program(env.compile(text))


def _to_cel(value: Any) -> Any:
    from celpy.adapter import json_to_cel

    return json_to_cel(value)


# ---------------------------------------------------------------- CRD files (validate)
@dataclass(frozen=True)
class CrdFile:
    path: Path
    crd: dict[str, Any]


def crd_dirs() -> list[Path]:
    raw = os.environ.get(CRD_DIR_ENV, "")
    return [Path(p) for p in raw.split(os.pathsep) if p]


def find_crd(group: str, kind: str, dirs: list[Path]) -> CrdFile | None:
    """The first CRD file (``*.yaml`` directly in a folder) defining ``kind`` of ``group``."""
    for folder in dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yaml")):
            crd = _load_crd(str(path), path.stat().st_mtime_ns)
            if crd is None:
                continue
            spec = crd.get("spec") or {}
            if spec.get("group") == group and (spec.get("names") or {}).get("kind") == kind:
                return CrdFile(path, crd)
    return None


@cache
def _load_crd(path: str, _mtime: int) -> dict[str, Any] | None:
    """One CRD document, read as data (safe loader; no tags, no code)."""
    import yaml

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        with open(path, "rb") as handle:
            docs = [d for d in yaml.load_all(handle, Loader=loader) if d]
    except (OSError, yaml.YAMLError):
        return None
    if len(docs) != 1 or not isinstance(docs[0], dict) \
            or docs[0].get("kind") != "CustomResourceDefinition":
        return None
    return docs[0]
