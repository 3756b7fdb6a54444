"""The JSON Schema of the spec: generated from the models, committed, read at run time."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

SCHEMA_ID = "https://ftspec.dev/schemas/ftspec.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
REGENERATE = "ftspec schema > schemas/ftspec.schema.json"


def generate_schema() -> dict[str, Any]:
    """Build the schema from the pydantic models (imports pydantic; not on the fast path)."""
    from ftspec.spec.model import FineTuneSpec

    body = FineTuneSpec.model_json_schema(mode="validation")
    schema: dict[str, Any] = {"$schema": DIALECT, "$id": SCHEMA_ID}
    schema.update(body)
    schema["title"] = "ftspec FineTune spec"
    return schema


def render_schema(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@lru_cache(maxsize=1)
def committed_schema() -> dict[str, Any]:
    """The schema shipped in the package (``schemas/ftspec.schema.json``)."""
    from importlib.resources import files

    text = (files("ftspec.schemas") / "ftspec.schema.json").read_text(encoding="utf-8")
    result: dict[str, Any] = json.loads(text)
    return result
