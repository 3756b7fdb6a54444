"""``sweep``: a grid over spec fields, one run per point (Terraform's ``for_each``).

``sweep.grid`` maps a dotted spec path (``training.learning_rate``) to the values it
takes; the points are every combination (``ftspec.spec.sweep``). What a path may name is
checked by ``rules/sweep.py``; each point is validated as a spec of its own.
``sweep.max_parallel`` bounds how many points of a local sweep run at once
(``reconciler/local/queue.py``).
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
MAX_PARALLEL = 64
"""No sweep has more points (``ftspec.spec.sweep.MAX_POINTS``)."""

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
    max_parallel: int | None = Field(
        None, ge=1, le=MAX_PARALLEL,
        description="At most this many points run at once on the local backend; the others "
        "wait queued and start as earlier points end (grid order). Default: what this "
        "machine holds, from the memory estimate against its memory and the cores (GPUs for "
        "a GPU spec), at least 1. Points that run at the same time share the machine, so "
        "output --compare flags the measured runtime and throughput of such points.",
    )
