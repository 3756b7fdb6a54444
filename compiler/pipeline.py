"""The one compile path: spec file (+ ``-f`` overlays, ``--set``) -> Job -> artifacts.

Every command that reads a spec goes through ``compile_spec``; none repeats a stage:

* ``identity`` (destroy, status, logs, explain): load, validate, build the Job. Needs no
  launcher package (torchtune, accelerate) and imports no target.
* ``checks`` (validate): also the advice about the Job (memory fit) and the checks of the
  spec's own launcher and deploy target.
* ``artifacts`` (compile, plan, apply): the chosen target's checks, the environment probes
  compiling needs (``environment``: is torchtune installed), then the artifacts.

One run lists every error it can find: the spec's validation errors and, whenever the Job
can still be derived (the typed model was built and no rule it rests on failed:
``ftspec.spec.rules.PREREQUISITES``), the target's too, so a user fixes both batches at
once. A target finding that says a rule's more exactly at the same key path
(``SAME_MEANING``) is listed instead of it; findings are sorted by position, stably.

Every diagnostic leaves here placed: key paths resolve through the loaded document's
source map, so positions from overlays (``overlay.yaml:L:C``) and flags (``--set[N]:1:C``)
survive to the CLI and to errors found later (an API server's 422 is located through
``Compiled.doc``, never by re-reading the base file).

A backend that renders for what it finds live (the Trainer API version a cluster serves)
passes that as ``CompileOptions.trainer_version``; ``compile_spec`` accepts an earlier
``Compiled`` so the spec is loaded and validated once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from ftspec.compiler import cache
from ftspec.compiler.cache import Slot
from ftspec.spec.diagnostics import Diagnostic, Diagnostics, Severity, SpecError
from ftspec.spec.ir import Job
from ftspec.spec.loader import SourceDoc
from ftspec.spec.sweep import Point
from ftspec.spec.validate import SchemaMode, Validated
from ftspec.targets.base import Artifact

Stage = Literal["identity", "checks", "artifacts"]


@dataclass(frozen=True)
class SpecInput:
    """A spec file with what the command line lays over it."""

    path: Path
    overlays: tuple[Path, ...] = ()
    sets: tuple[str, ...] = ()
    in_memory: bool = False
    """A document that was never a file (``path`` only names it; the spec id then comes
    from metadata, not from the file name)."""
    point: Point | None = None
    """One point of the file's ``sweep`` (``compiler/sweep.py``): its values laid over
    the document, which then has no sweep."""


@dataclass(frozen=True)
class CompileOptions:
    target: str | None = None
    """Compile target; None = what ``deploy.target`` needs."""
    trainer_version: str | None = None
    """The Kubeflow Trainer API the live cluster serves (None: the spec's pin)."""
    schema: SchemaMode = "always"
    """``on-error`` for the live commands: see ``ftspec.spec.validate``."""


@dataclass(frozen=True)
class Compiled:
    source: SpecInput
    doc: SourceDoc | None
    """The loaded document with its source map (None when it could not be loaded)."""
    job: Job | None
    """The IR; also built for a spec with errors when it can be derived (``ok`` says
    whether the spec is valid), None when it cannot."""
    target: str | None = None
    artifacts: tuple[Artifact, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = field(default_factory=tuple)
    """Every finding of every stage that ran, placed and sorted."""
    validation: tuple[Diagnostic, ...] = field(default_factory=tuple, repr=False)
    """The findings of loading and validation alone (kept to resume from ``identity``)."""
    cache: Slot | None = field(default=None, repr=False, compare=False)
    """Where this result is kept between runs, with the files it was computed from."""

    @property
    def ok(self) -> bool:
        return self.job is not None and not any(d.is_error for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]


def target_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"ftspec.targets.{name}") is not None


def load(source: SpecInput, schema: SchemaMode = "always") -> Validated:
    """Load the file, lay the overlays and ``--set`` values over it, validate."""
    from ftspec.spec.loader import load_spec_file
    from ftspec.spec.overrides import apply_overlay, apply_sets
    from ftspec.spec.validate import validate_doc

    try:
        doc = load_spec_file(source.path)
        for overlay in source.overlays:
            doc = apply_overlay(doc, load_spec_file(overlay))
        if source.sets:
            doc = apply_sets(doc, list(source.sets))
        if source.point is not None:
            from ftspec.spec.sweep import point_doc

            doc = point_doc(doc, source.point)
    except SpecError as exc:
        return Validated(None, None, Diagnostics(list(exc.diagnostics)))
    return validate_doc(doc, schema)


def place(diags: list[Diagnostic], doc: SourceDoc | None) -> list[Diagnostic]:
    """Give diagnostics that carry only a key path their position in the spec."""
    if doc is None:
        return diags
    return [d if d.span is not None else replace(d, span=doc.span_of(d.path)) for d in diags]


def compile_spec(spec: SpecInput | SourceDoc | Compiled, stage: Stage = "artifacts",
                 options: CompileOptions | None = None) -> Compiled:
    """Run ``spec`` through ``stage`` (see the module docstring); never raises for bad input.

    ``spec``: a file with its overlays and ``--set`` values, a document already in memory
    (its ``file`` names it), or an earlier result to carry on from. A file's result is
    kept between runs (``ftspec.compiler.cache``) and reused while nothing it was computed
    from has changed."""
    opts = options or CompileOptions()
    slot = _slot(spec, stage, opts)
    if slot is None:
        return _compile(spec, stage, opts)
    kept = cache.load(slot, Compiled)
    if kept is not None:
        return _with_doc(kept[0], spec)
    earlier = spec.cache.deps if isinstance(spec, Compiled) and spec.cache else ()
    start = time.time_ns()
    with cache.recording() as opened:
        result = _compile(spec, stage, opts)
    deps = cache.deps_of(opened, earlier)
    result = replace(result, cache=Slot(slot.key, deps))
    from ftspec.spec.rules.secrets import refused_for_secret  # a miss compiled: models loaded

    if cache.keepable(deps, start) and not refused_for_secret(result.diagnostics):
        cache.store(slot, _with_doc(result, spec, keep=False), deps)
    return result


def _with_doc(result: Compiled, spec: SpecInput | SourceDoc | Compiled,
              keep: bool = True) -> Compiled:
    """A result continued from an earlier one has that one's document: it is kept without
    it (``keep=False``) and given it back when read (a document is most of an entry)."""
    if not isinstance(spec, Compiled):
        return result
    if keep:
        return result if result.doc is not None else replace(result, doc=spec.doc)
    return replace(result, doc=None) if result.doc is spec.doc else result


def _slot(spec: SpecInput | SourceDoc | Compiled, stage: Stage,
          opts: CompileOptions) -> Slot | None:
    if isinstance(spec, SourceDoc):
        return None
    if isinstance(spec, Compiled):
        if spec.cache is None:
            return None
        return cache.slot_for("continued", spec.cache.key, stage, opts)
    if spec.in_memory:
        return None
    return cache.slot_for("file", str(spec.path), tuple(str(p) for p in spec.overlays),
                          spec.sets, stage, opts,
                          *(() if spec.point is None else (spec.point.values,)))


def _compile(spec: SpecInput | SourceDoc | Compiled, stage: Stage,
             opts: CompileOptions) -> Compiled:
    if isinstance(spec, Compiled):
        if spec.job is None:
            return spec
        source, doc, found = spec.source, spec.doc, list(spec.validation)
        job = spec.job  # the trainer version is the one input it may be built with anew
        if opts.trainer_version not in (None, job.trainer_version):
            job = replace(job, trainer_version=opts.trainer_version)
    else:
        if isinstance(spec, SourceDoc):
            from ftspec.spec.validate import validate_doc

            source = SpecInput(Path(spec.file), in_memory=True)
            validated = validate_doc(spec, opts.schema)
        else:
            source, validated = spec, load(spec, opts.schema)
        doc, found = validated.doc, list(validated.diagnostics.items)
        model = validated.spec if validated.ok else \
            validated.model if validated.derivable else None
        if model is None:
            return Compiled(source, doc, None, diagnostics=_sorted(found, doc))
        from ftspec.compiler.build import build_job

        job = build_job(model, None if source.in_memory else source.path,
                        opts.trainer_version, source.point)
    validation = tuple(found)
    if stage == "identity":
        return Compiled(source, doc, job, diagnostics=_sorted(found, doc),
                        validation=validation)
    from ftspec.compiler.checks import job_warnings, schedule_errors
    from ftspec.compiler.dispatch import check_job, compile_job, default_target

    found = found + schedule_errors(job) + job_warnings(job)
    name = opts.target or default_target(job)
    names = [name] if stage == "artifacts" else list(dict.fromkeys((job.launcher, name)))
    for each in names:
        if not target_available(each):
            path = ("deploy", "target") if opts.target is None else ()
            found.append(Diagnostic(Severity.ERROR, f"target {each} is not available in this "
                                    "installation", path=path, code="compile.target-missing"))
            continue
        found = merged(found, check_job(job, each))
    if stage == "artifacts" and not any(d.is_error for d in found):
        found.extend(environment(job))
    if stage == "checks" or any(d.is_error for d in found):
        return Compiled(source, doc, job, name, diagnostics=_sorted(found, doc),
                        validation=validation)
    artifacts = tuple(compile_job(job, name))
    return Compiled(source, doc, job, name, artifacts, _sorted(found, doc), validation)


SAME_MEANING: dict[str, frozenset[str]] = {
    "kubeflow.initializer-uri": frozenset({"rule.remote-file-uri"}),
    "kuberay.uri-scheme": frozenset({"rule.remote-file-uri"}),
    "kuberay.name-length": frozenset({"rule.name-length"}),
    "kubeflow.name-length": frozenset({"rule.name-length"}),
    "target.torchtune.strategy": frozenset({"rule.strategy-none"}),
}
"""A target's finding -> the rule findings it says more exactly at the same key path (a
location the target's container cannot read, with the schemes that it can; a name over the
RayJob's 47 characters or the TrainJob runtime's limit, not only over 63; a strategy
torchtune's recipes cannot run, with the one they can): one of them is listed, the
target's."""


def merged(found: list[Diagnostic], more: Iterable[Diagnostic]) -> list[Diagnostic]:
    """``found`` with each of ``more`` that says something new: a finding already there is
    dropped, and one that says a rule's finding more exactly (``SAME_MEANING``) takes its
    place in the list."""
    out = list(found)
    for d in more:
        if d in out:
            continue
        general = SAME_MEANING.get(d.code or "", frozenset())
        same = [i for i, e in enumerate(out) if e.path == d.path and e.code in general
                and e.severity == d.severity]
        if same:
            out[same[0]] = d
            out = [e for i, e in enumerate(out) if i not in same[1:]]
        else:
            out.append(d)
    return out


def environment(job: Job) -> list[Diagnostic]:
    """Probes of this machine that compiling needs (is the launcher's package installed);
    ``validate`` never runs them, so its answer does not depend on the machine."""
    from ftspec.targets import get_launcher

    return get_launcher(job.launcher).probe(job)


def _sorted(found: list[Diagnostic], doc: SourceDoc | None) -> tuple[Diagnostic, ...]:
    return tuple(Diagnostics(place(found, doc)).sorted())
