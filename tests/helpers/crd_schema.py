"""CRD ``openAPIV3Schema`` -> JSON Schema, so emitted objects can be checked offline.

The conversion follows Kubernetes' structural-schema semantics as a strict client
(``kubectl --validate=strict``) sees them:

- an object with ``properties`` rejects unknown fields (``additionalProperties: false``)
  unless it carries ``x-kubernetes-preserve-unknown-fields: true``;
- ``x-kubernetes-int-or-string`` accepts an integer or a string (a ``pattern`` next to it
  constrains only the string form, as in JSON Schema);
- ``nullable: true`` also accepts ``null``;
- ``format: int32`` / ``int64`` become numeric bounds;
- ``x-kubernetes-embedded-resource`` objects get ``apiVersion``, ``kind`` and ``metadata``;
- the root ``metadata`` is checked for the fields of ObjectMeta that ftspec sets.

Not evaluated: CEL rules (``x-kubernetes-validations``) and list-map key uniqueness — the
server-side dry-run test covers those.

The upstream CRDs themselves are found by ``helpers.upstream``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

INT_BOUNDS = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
PASS_THROUGH = (
    "enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minItems", "maxItems", "minProperties", "maxProperties", "required",
    "multipleOf", "uniqueItems",
)
OBJECT_META: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
    },
    "additionalProperties": False,
}


def convert(node: dict[str, Any], *, root: bool = False) -> dict[str, Any]:
    """One structural-schema node -> an equivalent JSON Schema node."""
    out: dict[str, Any] = {}
    if node.get("x-kubernetes-int-or-string"):
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    elif "anyOf" in node:
        out["anyOf"] = [convert(n) for n in node["anyOf"]]
    if "allOf" in node:
        out["allOf"] = [convert(n) for n in node["allOf"]]
    if "oneOf" in node:
        out["oneOf"] = [convert(n) for n in node["oneOf"]]
    kind = node.get("type")
    if kind is not None and "anyOf" not in out:
        out["type"] = [kind, "null"] if node.get("nullable") else kind
    for key in PASS_THROUGH:
        if key in node:
            out[key] = node[key]
    fmt = node.get("format")
    if fmt in INT_BOUNDS:
        low, high = INT_BOUNDS[fmt]
        out.setdefault("minimum", low)
        out.setdefault("maximum", high)
    if node.get("nullable") and "enum" in out:
        out["enum"] = [*out["enum"], None]
    if "items" in node:
        out["items"] = convert(node["items"])
    props: dict[str, Any] = dict(node.get("properties", {}))
    if node.get("x-kubernetes-embedded-resource"):
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    if props:
        out["properties"] = {k: convert(v) for k, v in props.items()}
        if root and "metadata" in out["properties"]:
            out["properties"]["metadata"] = OBJECT_META
    preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = convert(extra)
    elif extra is not None:
        out["additionalProperties"] = bool(extra)
    elif props and not preserve:
        out["additionalProperties"] = False
    return out


@cache
def _load(path: str) -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader: CRDs are ~1 MB
    with open(path, encoding="utf-8") as fh:
        data: dict[str, Any] = yaml.load(fh, Loader=loader)
    return data


def crd_json_schema(crd_path: Path, version: str) -> dict[str, Any]:
    """The JSON Schema of one served version of the CRD at ``crd_path``."""
    return _schema(str(crd_path), version)


@cache
def _schema(crd_path: str, version: str) -> dict[str, Any]:
    crd = _load(crd_path)
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            schema = convert(entry["schema"]["openAPIV3Schema"], root=True)
            group = crd["spec"]["group"]
            kind = crd["spec"]["names"]["kind"]
            props = schema.setdefault("properties", {})
            props["apiVersion"] = {"const": f"{group}/{version}"}
            props["kind"] = {"const": kind}
            schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind"})
            return schema
    raise KeyError(f"{crd_path} has no version {version}")


def validation_errors(obj: Any, crd_path: Path, version: str) -> list[str]:
    """Every schema violation of ``obj``, as ``path: message`` lines (empty = valid)."""
    validator = _validator(str(crd_path), version)
    found = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.path))):
        where = ".".join(str(p) for p in err.absolute_path) or "<root>"
        found.append(f"{where}: {err.message}")
    return found


@cache
def _validator(crd_path: str, version: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_schema(crd_path, version))
