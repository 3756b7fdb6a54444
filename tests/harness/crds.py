"""Loading upstream CRDs and adapting them for a Kubernetes 1.20 API server (test cluster only).

A 1.20 server predates CEL validation rules and rejects parts of today's CRDs. The
transformation (see ../shared/notes/real-kube-apiserver.md, section 4):

- drop every ``x-kubernetes-validations`` key (CEL rules);
- drop ``default: ""`` entries (1.20 reads them as null and rejects the CRD);
- turn ``x-kubernetes-list-type: map`` into ``atomic`` and drop ``x-kubernetes-list-map-keys``.

The server's copies carry no CEL rules; ``cel_webhook.py`` enforces the upstream files' rules on
every write instead.

Parsing the multi-MB YAML files costs ~1 s, so the transformed JSON is cached under
``<cache>/envtest/crd-cache/`` keyed by the file's SHA-256 (and a transform version).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import yaml

from harness.kube_build import envtest_dir

TRANSFORM_VERSION = "1"

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available


def transform_for_1_20(node: Any) -> Any:
    """Return a copy of ``node`` (a CRD or any part of it) with the 1.20 adaptations applied."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("x-kubernetes-validations", "x-kubernetes-list-map-keys"):
                continue
            if key == "default" and value == "":
                continue
            if key == "x-kubernetes-list-type" and value == "map":
                out[key] = "atomic"
                continue
            out[key] = transform_for_1_20(value)
        return out
    if isinstance(node, list):
        return [transform_for_1_20(item) for item in node]
    return node


def load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    with path.open("rb") as handle:
        return [doc for doc in yaml.load_all(handle, Loader=_Loader) if doc]


def load_crd_for_1_20(path: Path) -> dict[str, Any]:
    """The CRD in ``path`` (one document), transformed for 1.20; cached as JSON."""
    raw = path.read_bytes()
    digest = hashlib.sha256(raw + TRANSFORM_VERSION.encode()).hexdigest()
    cache_file = envtest_dir() / "crd-cache" / f"{digest}.json"
    if cache_file.is_file():
        cached: dict[str, Any] = json.loads(cache_file.read_text())
        return cached
    docs = [doc for doc in yaml.load_all(raw, Loader=_Loader) if doc]
    if len(docs) != 1 or docs[0].get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{path} is not a single CustomResourceDefinition document")
    crd: dict[str, Any] = transform_for_1_20(docs[0])
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(crd, separators=(",", ":")))
    os.replace(tmp, cache_file)
    return crd
