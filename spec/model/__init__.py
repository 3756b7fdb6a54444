"""The spec language's typed model (pydantic v2). ``FineTuneSpec`` is the root."""

from ftspec.spec.model.root import API_VERSION, KIND, FineTuneSpec

__all__ = ["API_VERSION", "KIND", "FineTuneSpec"]
