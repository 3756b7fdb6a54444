"""Reading compiled and live objects for the real-controller tests (pure helpers, no cluster calls)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

FILE_MARKER = re.compile(r"^# --- [^\n]+ ---$", re.MULTILINE)


def documents(text: str) -> list[dict[str, Any]]:
    """The objects ``ftspec compile`` printed: one file per ``# --- name ---`` line."""
    parts = FILE_MARKER.split(text)
    return [doc for part in parts for doc in yaml.safe_load_all(part) if isinstance(doc, dict)]


def walk(node: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair in a nested structure."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def referenced_secrets(obj: Any) -> dict[str, set[str]]:
    """Secret name -> the keys that secretKeyRef entries read (envFrom / pull secrets: no keys)."""
    found: dict[str, set[str]] = {}
    for key, value in walk(obj):
        if key == "secretKeyRef" and isinstance(value, dict):
            found.setdefault(str(value["name"]), set()).add(str(value["key"]))
        elif key in ("secretRef", "imagePullSecrets"):
            refs = value if isinstance(value, list) else [value]
            for ref in refs:
                if isinstance(ref, dict) and ref.get("name"):
                    found.setdefault(str(ref["name"]), set())
    return found


def referenced_claims(obj: Any) -> set[str]:
    return {str(v["claimName"]) for k, v in walk(obj) if k == "persistentVolumeClaim" and isinstance(v, dict)}


def referenced_service_accounts(obj: Any) -> set[str]:
    return {str(v) for k, v in walk(obj) if k == "serviceAccountName" and v}


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == name)


def gpu_limit(resources: dict[str, Any]) -> int:
    limits = resources.get("limits") or resources.get("requests") or {}
    return int(limits.get("nvidia.com/gpu", 0))


def env_map(containers: list[dict[str, Any]] | dict[str, Any]) -> dict[str, Any]:
    """name -> value or valueFrom of a container's (or an env list's) entries."""
    entries = containers.get("env") if isinstance(containers, dict) else containers
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in entries or []}
