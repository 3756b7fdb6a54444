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
not provided; a rule that needs one is reported as not evaluated, never as passed. Rules are
evaluated within a cost budget (``cel_budget.py``, as the API server bounds them): a rule
over it, too large or nested too deeply is reported as not evaluated too.

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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ftspec.compiler.cel_budget import Meter

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
    from ftspec.compiler.cel_budget import Meter

    return list(_walk(schema, obj, old, (), Meter(), root=True))


def _walk(node: dict[str, Any], value: Any, old: Any, path: Path_, meter: Meter, *,
          root: bool = False) -> Iterator[Violation]:
    if value is None:
        return
    enum = node.get("enum")
    if enum is not None and value not in enum:
        yield Violation(path, f"Unsupported value: {value!r}: supported values: "
                        + ", ".join(repr(v) for v in enum), "enum")
    rules = node.get("x-kubernetes-validations") or []
    if rules:
        seen = root_view(value) if root else value
        old_seen = root_view(old) if root and old is not None else old
        for rule in rules if isinstance(rules, list) else []:
            if isinstance(rule, dict):
                yield from _evaluate(rule, seen, old_seen, path, meter)
    if isinstance(value, dict):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        for key, item in value.items():
            child = props.get(key) or (extra if isinstance(extra, dict) else None)
            if child is None or (root and key == "metadata"):
                continue
            old_item = old.get(key) if isinstance(old, dict) else None
            yield from _walk(child, item, old_item, path + (key,), meter)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        items = node["items"]
        olds = _correlate(node, value, old)
        for i, item in enumerate(value):
            yield from _walk(items, item, olds[i], path + (i,), meter)


def root_view(obj: Any) -> Any:
    """What a rule at an object's root sees of it (as kube-apiserver shows it): of its
    metadata, only ``name`` and ``generateName``."""
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


def _evaluate(rule: dict[str, Any], value: Any, old: Any, path: Path_, meter: Meter
              ) -> Iterator[Violation]:
    text = str(rule.get("rule", ""))
    transition = is_transition(text)
    if transition and old is None and not rule.get("optionalOldSelf"):
        return
    program, problem = _program(text)
    if program is None:
        yield Violation(path, f"rule not evaluated: {problem}", text)
        return
    activation = {"self": _to_cel(value)}
    if transition:
        activation["oldSelf"] = _to_cel(old)
    from celpy.evaluation import CELEvalError
    from ftspec.compiler.cel_budget import OverBudget, evaluate

    try:
        result = evaluate(program, activation, meter)
    except CELEvalError as exc:
        yield Violation(path, f"rule not evaluated: {exc.args[0] if exc.args else exc}", text)
        return
    except OverBudget as exc:
        yield Violation(path, f"rule not evaluated: {exc}", text)
        return
    except RecursionError:
        yield Violation(path, "rule not evaluated: it nests too deeply to evaluate", text)
        return
    if isinstance(result, CELEvalError):
        yield Violation(path, f"rule not evaluated: {result.args[0] if result.args else ''}",
                        text)
    elif result is not True and not (hasattr(result, "__bool__") and bool(result)):
        field = rule.get("fieldPath") or _single_field(text)
        where = path + _field_path(str(field)) if field else path
        yield Violation(where, str(rule.get("message") or f"failed rule: {text}"), text)


def is_transition(text: str) -> bool:
    """Whether a rule reads ``oldSelf`` (a transition rule: it runs only on update)."""
    return re.search(r"\boldSelf\b", text) is not None


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
def _program(text: str) -> tuple[Any, str | None]:
    """The compiled rule, or None and why it cannot be (too large, nested too deeply, not
    valid CEL); evaluated within ``cel_budget``'s limits."""
    try:
        import celpy
    except ImportError as exc:
        raise EvaluatorMissing("cel-python is not installed") from exc
    from ftspec.compiler.cel_budget import metered_runner, too_complex

    problem = too_complex(text)
    if problem is not None:
        return None, problem
    from celpy.celparser import CELParseError

    env = celpy.Environment(runner_class=metered_runner())
    try:
        return env.program(env.compile(text)), None
    except CELParseError as exc:
        return None, f"not valid CEL ({str(exc).splitlines()[0][:200] if str(exc) else ''})"
    except RecursionError:
        return None, "it nests too deeply to compile"


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


MAX_CRD_BYTES = 16 << 20
"""The largest CRD file read (the largest upstream CRDs are a few MiB)."""


def find_crd(group: str, kind: str, dirs: list[Path], skipped: list[str] | None = None
             ) -> CrdFile | None:
    """The first CRD file (``*.yaml`` directly in a folder) defining ``kind`` of ``group``.
    Only regular files up to ``MAX_CRD_BYTES`` are read (a FIFO would block, a device never
    end); each file passed over for that, or for not being one CRD, is added to ``skipped``
    with why (a YAML file that is not one CRD is passed over silently)."""
    for folder in dirs:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.yaml")):
            loaded = _load_crd(str(path))
            if isinstance(loaded, str) and skipped is not None and loaded not in skipped:
                skipped.append(loaded)
            if not isinstance(loaded, dict):
                continue
            spec = loaded.get("spec") or {}
            if not isinstance(spec, dict) or not isinstance(spec.get("names"), dict):
                continue
            if spec.get("group") == group and spec["names"].get("kind") == kind:
                return CrdFile(path, loaded)
    return None


_PARSED: dict[tuple[str, int, int], dict[str, Any] | str | None] = {}


def _load_crd(path: str) -> dict[str, Any] | str | None:
    """One CRD document, read as data (safe loader; no tags, no code); None for a file that
    is not one CRD; why, for a file that could not be read."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"{path}: not read ({exc.strerror})"
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            return f"{path}: not read (not a regular file)"
        if st.st_size > MAX_CRD_BYTES:
            return f"{path}: not read (larger than {MAX_CRD_BYTES >> 20} MiB)"
        key = (path, st.st_mtime_ns, st.st_size)
        if key not in _PARSED:
            os.set_blocking(fd, True)
            _PARSED[key] = _parse_crd(path, handle.read(MAX_CRD_BYTES + 1))
        return _PARSED[key]


def _parse_crd(path: str, raw: bytes) -> dict[str, Any] | str | None:
    import yaml

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        docs = [d for d in yaml.load_all(raw, Loader=loader) if d]
    except (yaml.YAMLError, RecursionError):
        return f"{path}: not read (not valid YAML, or nested too deeply)"
    if len(docs) != 1 or not isinstance(docs[0], dict) \
            or docs[0].get("kind") != "CustomResourceDefinition":
        return None
    return docs[0]
