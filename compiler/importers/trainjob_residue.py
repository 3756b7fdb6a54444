"""Compile the imported draft and keep what still differs from the TrainJob as a merge patch.

The draft compiles (kubeflow target, for the Trainer API the source or the cluster uses)
to a TrainJob; ``trainjob_defaults.comparable`` puts both sides on the same footing (CRD
defaults filled, ftspec's bookkeeping keys dropped), and ``merge_diff`` gives the patch that
turns the compiled object into the source. It goes to ``overrides.trainjob``, which the
kubeflow target applies last, with a warning at the source line of every key it holds —
so the spec compiles back to the same TrainJob, and nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ftspec.compiler.importers.base import SpecDraft
from ftspec.compiler.importers.trainjob_defaults import comparable
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity
from ftspec.targets.merge_patch import merge_diff

RAW: KeyPath = ("overrides", "trainjob")
ARGS: KeyPath = ("spec", "trainer", "args")


def compile_draft(draft: SpecDraft, version: str | None
                  ) -> tuple[dict[str, Any] | None, list[Diagnostic]]:
    """The TrainJob the draft compiles to, or None and the errors."""
    from ftspec.compiler.importers.render import rendered
    from ftspec.compiler.pipeline import CompileOptions, compile_spec

    compiled = compile_spec(rendered(draft), "artifacts",
                            CompileOptions(target="kubeflow", trainer_version=version))
    if not compiled.ok:
        return None, [d for d in compiled.diagnostics if d.is_error]
    for art in compiled.artifacts:
        if isinstance(art.obj, dict) and art.obj.get("kind") == "TrainJob":
            return art.obj, []
    return None, []


def residue(source: dict[str, Any], compiled: dict[str, Any]) -> dict[str, Any]:
    """The merge patch turning ``compiled`` into ``source`` (both made comparable)."""
    keep_ns = "namespace" in (source.get("metadata") or {})
    source = _named(source, compiled)
    patch = merge_diff(comparable(compiled, namespace=keep_ns),
                       comparable(source, namespace=keep_ns))
    return patch if isinstance(patch, dict) else {}


def _named(source: dict[str, Any], compiled: dict[str, Any]) -> dict[str, Any]:
    """A source named by ``generateName`` only, as the name the import gave it
    (``trainjob._generate_name``): the same TrainJob once created."""
    meta = source.get("metadata") or {}
    if "generateName" not in meta or "name" in meta:
        return source
    named = {k: v for k, v in meta.items() if k != "generateName"}
    named["name"] = (compiled.get("metadata") or {}).get("name")
    return {**source, "metadata": named}


def settle(draft: SpecDraft, version: str | None,
           same_args: Callable[[list[str]], list[str]] | None = None) -> None:
    """Add ``overrides.trainjob`` until the draft compiles to the source; warn per key.
    ``same_args``: the config keys where the compiled trainer args resolve differently
    from the source's (torchtune runtimes; None: the source's args are kept as they are)."""
    for _ in range(2):
        compiled, errors = compile_draft(draft, version)
        if compiled is None:
            draft.warnings += [Diagnostic(Severity.ERROR, "the imported spec does not compile: "
                                          f"{d.summary}", path=d.path, hint=d.hint,
                                          span=draft.span_for_spec(d.path),
                                          code="import.invalid") for d in errors]
            return
        patch = residue(draft.source.data, compiled)
        why = _drop_same_args(patch, compiled, same_args)
        if not patch:
            return
        current = draft.get(RAW) or {}
        draft.put(RAW, _update(current, patch), "what the spec cannot express (see the "
                  "warnings): a merge patch the kubeflow target applies last")
        for path, value in _leaves(patch, ()):
            _warn(draft, path, value, why if path == ARGS else None)
    compiled, _ = compile_draft(draft, version)
    left = residue(draft.source.data, compiled) if compiled is not None else {}
    if compiled is not None:
        _drop_same_args(left, compiled, same_args)
    if left:
        first = _leaves(left, ())[0][0]
        draft.warnings.append(Diagnostic(
            Severity.ERROR, "the imported spec does not compile back to the same TrainJob",
            path=first, span=draft.source.span_of(first, key=True), code="import.not-equal"))


def _drop_same_args(patch: dict[str, Any], compiled: dict[str, Any],
                    same_args: Callable[[list[str]], list[str]] | None) -> str | None:
    """Args that differ in text but resolve to the same config are not a difference;
    otherwise: why the source's args are kept."""
    trainer = (patch.get("spec") or {}).get("trainer")
    if not isinstance(trainer, dict) or "args" not in trainer:
        return None
    if same_args is None:
        return ("kept as they are: the trainer is immutable, so other args would replace "
                "the live TrainJob")
    keys = same_args([str(a) for a in compiled["spec"]["trainer"].get("args") or []])
    if keys:
        return (f"kept as they are: the args ftspec writes from the spec resolve "
                f"differently at {', '.join(keys[:6])}{' ...' if len(keys) > 6 else ''}")
    del trainer["args"]
    if not trainer:
        del patch["spec"]["trainer"]
    if not patch["spec"]:
        del patch["spec"]
    return None


def _update(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``patch`` merged in, keeping ``None`` (a removal in the patch)."""
    out = dict(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _update(out[key], value)
        else:
            out[key] = value
    return out


def _leaves(patch: Any, path: KeyPath) -> list[tuple[KeyPath, Any]]:
    if isinstance(patch, dict) and patch:
        out: list[tuple[KeyPath, Any]] = []
        for key, value in patch.items():
            out += _leaves(value, path + (key,))
        return out
    return [(path, patch)]


def _warn(draft: SpecDraft, path: KeyPath, value: Any, why: str | None = None) -> None:
    dotted = ".".join(str(p) for p in path)
    if why is not None:
        draft.warn(path, f"{dotted} {why}; in overrides.trainjob they replace the args the "
                   "spec's sections would give (validate says so)")
    elif value is None:
        draft.warn(path[:-1], f"{dotted} is not in the TrainJob; ftspec would set it, so "
                   "overrides.trainjob removes it (null)")
    elif path[:2] == ("spec", "initializer"):
        draft.warn(path, f"{dotted}: the kubeflow target writes initializers for torchtune "
                   "runtimes only: kept as it is in overrides.trainjob")
    else:
        draft.warn(path, f"{dotted} has no spec field: kept as it is in overrides.trainjob")
