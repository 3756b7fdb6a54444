"""A ``model.family`` written as a variant of a catalog name (``-instruct`` / ``-base``).

The spec model resolves the name to the catalog key while it validates, so this check reads
the name as written in the document; ``spec/validate.py`` runs it beside the rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ftspec.spec.catalog.models import MODEL_FAMILIES, VARIANT_ALIASES
from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.rules._diag import warning


def family_variant(data: Any) -> Iterator[Diagnostic]:
    model = data.get("model") if isinstance(data, dict) else None
    written = model.get("family") if isinstance(model, dict) else None
    key = VARIANT_ALIASES.get(written) if isinstance(written, str) else None
    if key is None:
        return
    yield warning(("model", "family"), f'model family "{written}" is not in the catalog; '
                  f'read as {key} ({MODEL_FAMILIES[key].display}), which differs only by '
                  "-instruct / -base: an instruct model has its base model's shape",
                  "family-variant", hint=f"write model.family: {key} if that is the model")
