"""``sweep``: a grid over spec fields, one run per point (Terraform's ``for_each``).

``sweep.grid`` maps a dotted spec path (``training.learning_rate``) to the values it
takes; the points are every combination (``ftspec.spec.sweep``). What a path may name is
checked by ``rules/sweep.py``; each point is validated as a spec of its own.
"""

from __future__ import annotations

from typing import Annotated

from ftspec.spec.model.base import SpecModel
from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    StringConstraints,
    WithJsonSchema,
)

GRID_PATH = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_-]+)*$"
"""A dotted key path: field names, list indexes (``datasets.0.proportion``), raw keys."""
MAX_DIMENSIONS = 8
MAX_VALUES = 64
"""Per dimension; the points in all are bounded by ``ftspec.spec.sweep.MAX_POINTS``."""

_SCALAR = [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]
_VALUE = {"anyOf": [*_SCALAR, {"type": "array", "items": {"type": "string"}}]}
_GRID = {
    "type": "object", "minProperties": 1, "maxProperties": MAX_DIMENSIONS,
    "propertyNames": {"type": "string", "pattern": GRID_PATH, "maxLength": 200},
    "additionalProperties": {"type": "array", "minItems": 1, "maxItems": MAX_VALUES,
                             "items": _VALUE},
}
GridPath = Annotated[str, StringConstraints(pattern=GRID_PATH, max_length=200)]
GridValue = StrictBool | StrictInt | StrictFloat | StrictStr | list[StrictStr]
Grid = Annotated[
    dict[GridPath, Annotated[list[GridValue], Field(min_length=1, max_length=MAX_VALUES)]],
    Field(min_length=1, max_length=MAX_DIMENSIONS), WithJsonSchema(_GRID)]


class Sweep(SpecModel):
    grid: Grid = Field(
        description="Spec fields by dotted path (training.learning_rate, method.lora.rank) -> "
        "the values each takes. One run per combination; each point's name and identity are "
        "metadata.name and the spec's id with the point's values appended "
        "(tiny-lr-1e-4-rank-8).",
    )
