"""Point a server-side error back at the spec line that produced the field."""

from __future__ import annotations

from pathlib import Path


def locate(spec_file: str, spec_path: str) -> str:
    """``FILE:LINE:COL (key.path)``, or ``FILE (key.path)`` when the key is not in the file."""
    try:
        from ftspec.spec.loader import load_spec_file

        doc = load_spec_file(Path(spec_file))
        span = doc.span_of(tuple(spec_path.split(".")))
        return f"{spec_file}:{span.line}:{span.col} ({spec_path})"
    except Exception:  # noqa: BLE001 - best effort: the key path alone still helps
        return f"{spec_file} ({spec_path})"
