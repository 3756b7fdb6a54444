"""``metadata``: the job's identity (fixed key paths: metadata.name, metadata.namespace)."""

from __future__ import annotations

from typing import Annotated

from ftspec.spec import patterns
from ftspec.spec.model.base import SpecModel
from pydantic import Field, StringConstraints, WithJsonSchema

_KEY = {"type": "string", "pattern": patterns.LABEL_KEY, "maxLength": 317}
_LABEL_VALUE = {"type": "string", "pattern": patterns.LABEL_VALUE, "maxLength": 63}
LabelKey = Annotated[str, StringConstraints(pattern=patterns.LABEL_KEY, max_length=317)]
LabelValue = Annotated[str, StringConstraints(pattern=patterns.LABEL_VALUE, max_length=63)]
# JSON Schema checks keys through propertyNames (pydantic would write patternProperties,
# which lets any other key through the schema stage).
Labels = Annotated[dict[LabelKey, LabelValue], WithJsonSchema(
    {"type": "object", "propertyNames": _KEY, "additionalProperties": _LABEL_VALUE})]
Annotations = Annotated[dict[LabelKey, str], WithJsonSchema(
    {"type": "object", "propertyNames": _KEY, "additionalProperties": {"type": "string"}})]


class Metadata(SpecModel):
    name: str = Field(
        min_length=1,
        max_length=253,
        description="Job name. Becomes the TrainJob/RayJob name and the Ray submission-id "
        "prefix; it must be an RFC 1035 label (lowercase letters, digits, '-', starting "
        "with a letter) of at most 63 characters (47 for a RayJob).",
    )
    namespace: str = Field(
        default="default",
        pattern=patterns.DNS_LABEL,
        max_length=63,
        description="Kubernetes namespace the job's objects are applied to.",
    )
    id: str | None = Field(
        default=None,
        pattern=patterns.SPEC_ID,
        max_length=63,
        description="Stable identity of this spec for ownership (label ftspec.dev/spec-id); "
        "defaults to metadata.name, so renaming the spec file keeps its runs. Set it to keep "
        "one identity while metadata.name changes (plan then deletes the objects of the old "
        "name).",
    )
    labels: Labels = Field(
        default_factory=dict,
        description="Labels copied onto every object ftspec creates (ownership labels are "
        "added by ftspec and may not be set here).",
    )
    annotations: Annotations = Field(
        default_factory=dict, description="Annotations copied onto every object ftspec creates."
    )
    description: str | None = Field(default=None, description="Free text for humans.")
