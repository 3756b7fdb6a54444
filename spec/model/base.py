"""The base class every spec section derives from."""

from __future__ import annotations

from ftspec.spec.patterns import URI as URI_PATTERN

__all__ = ["URI_PATTERN", "SpecModel"]
from pydantic import BaseModel, ConfigDict


class SpecModel(BaseModel):
    """Frozen, closed: unknown keys are errors and a loaded spec never changes."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        defer_build=True,
        populate_by_name=False,
        use_attribute_docstrings=False,
        validate_default=False,
        allow_inf_nan=False,
    )
