"""Compile the draft spec and keep what still differs from the source as raw torchtune keys.

The mapping in ``importers.torchtune`` covers every key the spec models. What is left —
a component the spec has no name for (a dataset builder with its own template, an unknown
optimizer), a key of the base config the user changed (profiler, metric logger) — goes to ``overrides.torchtune``
with a warning at its source line. A key the compiled config has and the source lacks
cannot be removed through the spec: that is a warning too. Never a silent drop.
"""

from __future__ import annotations

from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity

_MISSING = object()
RAW = ("overrides", "torchtune")


def compile_draft(draft: SpecDraft) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    """The resolved torchtune config the draft compiles to, or None and the errors."""
    from ftspec.compiler.importers.render import rendered
    from ftspec.compiler.pipeline import CompileOptions, compile_spec

    compiled = compile_spec(rendered(draft), "artifacts",
                            CompileOptions(target="torchtune"))
    if not compiled.ok:
        return None, [d for d in compiled.diagnostics if d.is_error]
    config = next(a for a in compiled.artifacts if a.kind == "config")
    assert isinstance(config.obj, dict)
    return config.obj, []


def differences(source: dict[str, Any], compiled: dict[str, Any]
                ) -> list[tuple[tuple[str, ...], Any, Any]]:
    """(key path, source value, compiled value) where they differ; a component whose
    ``_component_`` differs counts as one difference."""
    out: list[tuple[tuple[str, ...], Any, Any]] = []
    _diff(source, compiled, (), out)
    return out


def _diff(s: dict[str, Any], c: dict[str, Any], path: tuple[str, ...],
          out: list[tuple[tuple[str, ...], Any, Any]]) -> None:
    for key in list(s) + [k for k in c if k not in s]:
        sv, cv = s.get(key, _MISSING), c.get(key, _MISSING)
        if sv == cv and (type(sv) is type(cv) or _same_number(sv, cv)):
            continue
        if (isinstance(sv, dict) and isinstance(cv, dict)
                and sv.get("_component_") == cv.get("_component_")):
            _diff(sv, cv, path + (key,), out)
        else:
            out.append((path + (key,), sv, cv))


def settle(draft: SpecDraft) -> None:
    """Add raw overrides until the draft compiles to the source; warn about the rest."""
    warned = _Warned({tuple(d.path) for d in draft.warnings})
    for _ in range(2):
        compiled, errors = compile_draft(draft)
        if compiled is None:
            draft.warnings += [Diagnostic(Severity.ERROR, f"the imported spec does not "
                               f"compile: {d.summary}", path=d.path, hint=d.hint,
                               span=draft.span_for_spec(d.path),
                               code="import.invalid") for d in errors]
            return
        diffs = differences(draft.source.data, compiled)
        if not diffs:
            return
        added = False
        for path, src, out in diffs:
            kp: KeyPath = path
            dotted = ".".join(path)
            if src is _MISSING:
                if f"~{dotted}" in (draft.get(RAW) or {}):
                    continue
                draft.put(RAW + (f"~{dotted}",), None, "not in the source: removed")
                added = True
                if kp not in warned:
                    draft.warn(path[:-1], f"{dotted} is not in the source; the spec's base "
                               f"config sets it ({_short(out)}), so the spec removes it with "
                               f"overrides.torchtune ~{dotted}")
                    warned.add(kp)
                continue
            if dotted in (draft.get(RAW) or {}):
                continue  # already raw: the warning below says why it still differs
            draft.put(RAW + (dotted,), src, draft.origin_of(path))
            added = True
            if kp not in warned:
                draft.warn(path, f"no spec field gives {_short(src)}; kept as raw "
                           "overrides.torchtune (the torchtune target only)")
                warned.add(kp)
        if not added:
            return


class _Warned(set[KeyPath]):
    """Source paths already warned about: a path is covered by itself and its relatives."""

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, tuple):
            return False
        return any(p[: len(path)] == path or path[: len(p)] == p for p in self)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _same_number(a: Any, b: Any) -> bool:
    """16 and 16.0 (the spec's float alpha written into a builder's arguments): torchtune
    reads both as the same number; bools are not numbers here."""
    return (isinstance(a, (int, float)) and isinstance(b, (int, float))
            and not isinstance(a, bool) and not isinstance(b, bool))
