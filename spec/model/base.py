"""The base class every spec section derives from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

URI_PATTERN = r"^[A-Za-z][A-Za-z0-9+.-]*://.+$"
"""``scheme://rest``: hf://, s3://, gs://, pvc://, file://, http(s)://."""


class SpecModel(BaseModel):
    """Frozen, closed: unknown keys are errors and a loaded spec never changes."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=False,
        use_attribute_docstrings=False,
        validate_default=False,
    )
