"""The base class every spec section derives from."""

from __future__ import annotations

from typing import Any, Literal

from ftspec.spec.patterns import URI as URI_PATTERN

__all__ = ["URI_PATTERN", "InputIdentity", "SpecModel", "identity_field"]
from pydantic import BaseModel, ConfigDict, Field

InputIdentity = Literal["content", "path"]
"""How a plan knows an input (``ftspec.reconciler.inputs``): by its bytes, or by its path."""


def identity_field() -> Any:
    """``identity`` of an input the job reads (the model, its tokenizer, a dataset)."""
    return Field(
        default="content",
        description="content: plan compares the bytes of a file:// input (sha256, kept in "
        "a cache by size and modification time) with those the applied run read, so a "
        "changed file under the same path plans a retrain; path: only the location counts "
        "and the plan says the content was not checked.",
    )


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
