"""A sweep spec -> one ``Compiled`` per point, through the one compile path.

A spec with ``sweep.grid`` is first compiled as written (its own values must make a valid
spec: they are what every point starts from, and the grid's paths are checked there).
Each point is then the same file with the point's values laid over it
(``SpecInput.point``, ``ftspec.spec.sweep.point_doc``), compiled like any spec: its own
Job, identity (``compiler.build.point_id``) and artifacts. The live commands plan, apply,
watch and destroy the points as ordinary jobs.

A finding of a point that the spec as written does not have is that point's: its summary
names the point, and where it concerns a swept field its position is the grid value.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ftspec.compiler.pipeline import Compiled, CompileOptions, Stage, compile_spec
from ftspec.spec.diagnostics import Diagnostic, Severity
from ftspec.spec.sweep import Point, points


def grid_of(compiled: Compiled) -> dict[str, list[Any]] | None:
    """The validated spec's ``sweep.grid`` (read from its document, which is what was
    validated: the Job's spec is loaded only when needed), or None."""
    if not compiled.ok or compiled.doc is None or compiled.source.point is not None:
        return None
    sweep = compiled.doc.data.get("sweep") if isinstance(compiled.doc.data, dict) else None
    if not isinstance(sweep, dict) or not isinstance(sweep.get("grid"), dict):
        return None
    grid: dict[str, list[Any]] = sweep["grid"]
    return grid


def max_parallel_of(compiled: Compiled) -> int | None:
    """The validated spec's ``sweep.max_parallel`` (None: not set, or no sweep)."""
    if grid_of(compiled) is None:
        return None
    assert compiled.doc is not None
    value = compiled.doc.data["sweep"].get("max_parallel")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def expand(compiled: Compiled, stage: Stage, options: CompileOptions | None = None
           ) -> list[Compiled]:
    """``compiled``'s points, each compiled to ``stage``; a spec without a sweep: itself."""
    grid = grid_of(compiled)
    if grid is None:
        return [compiled]
    if compiled.source.in_memory:
        return [replace(compiled, job=None, diagnostics=(*compiled.diagnostics, Diagnostic(
            Severity.ERROR, "a sweep is expanded from a spec file; this document was never "
            "one", path=("sweep",), span=compiled.doc.span_of(("sweep",))
            if compiled.doc else None, code="sweep.in-memory")))]
    known = {_key(d) for d in compiled.diagnostics}
    return [_named(compile_spec(replace(compiled.source, point=point), stage, options),
                   point, known) for point in points(grid)]


def point_findings(compiled: Compiled, expanded: list[Compiled]) -> list[Diagnostic]:
    """The spec's own findings, then each point's new ones (for ``validate``)."""
    found = list(compiled.diagnostics)
    seen = {_key(d) for d in found}
    for each in expanded:
        for d in each.diagnostics:
            if _key(d) not in seen:
                seen.add(_key(d))
                found.append(d)
    return found


def _key(d: Diagnostic) -> tuple[Any, ...]:
    return (d.severity, d.summary, d.span, d.code)


def _named(result: Compiled, point: Point, known: set[tuple[Any, ...]]) -> Compiled:
    if result is None or not result.diagnostics:
        return result
    label = f"sweep point {point.label} ({point.describe()})"
    named = tuple(d if _key(d) in known else replace(d, summary=f"{label}: {d.summary}")
                  for d in result.diagnostics)
    return replace(result, diagnostics=named)
