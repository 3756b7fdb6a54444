"""Point an error found live (an API server's 422) back at the spec line behind the field."""

from __future__ import annotations

from pathlib import Path

from ftspec.spec.loader import SourceDoc


def locate(spec_file: str, spec_path: str, doc: SourceDoc | None = None,
           bad_value: str | None = None) -> str:
    """``FILE:LINE:COL (key.path)``, or ``FILE (key.path)`` when the key cannot be placed.

    ``doc`` is the spec as loaded for the command (overlays and ``--set`` included), so the
    position is the one the other diagnostics use; without it (a saved plan applied later)
    the base file is read again. ``bad_value``: the value the server refused, which narrows
    a map to the entry holding it."""
    path: tuple[str | int, ...] = tuple(spec_path.split("."))
    if doc is not None:
        node = doc.value_at(path)
        if bad_value is not None and isinstance(node, dict):
            # a map such as metadata.labels: the entry whose value the server refused
            key = next((k for k, v in node.items() if str(v) == bad_value), None)
            if key is not None:
                path, spec_path = path + (key,), f"{spec_path}.{key}"
        return f"{doc.span_of(path)} ({spec_path})"
    try:
        from ftspec.spec.loader import load_spec_file

        span = load_spec_file(Path(spec_file)).span_of(path)
        return f"{span} ({spec_path})"
    except Exception:  # noqa: BLE001 - best effort: the key path alone still helps
        return f"{spec_file} ({spec_path})"
