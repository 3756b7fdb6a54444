"""Spec files -> the backend and each spec's ``Desired`` state, through the one compile path.

The live commands (plan, apply, destroy, status, logs) all start here:

1. every spec goes through ``compile_spec`` to its Job (``identity``); a spec with a
   ``sweep`` becomes one Job per point (``compiler/sweep.py``), each an ordinary job here;
   two jobs with one identity (``reconciler.identity``) are refused at the second one's
   ``metadata.name``; a spec that fails lists its deploy target's errors with its
   validation errors (plan and apply; destroy, status and logs need only the identity);
2. the specs' deploy targets pick one backend;
3. unless only the job's identity is needed (destroy, status, logs), the backend says what
   to compile for (``compile_options``: the Trainer API the cluster serves) and the same
   ``Compiled`` values continue to their artifacts; a backend that can (``Prefetcher``)
   starts each spec's live reads as soon as it is compiled, so reading overlaps compiling;
   each compiled job's inputs are read by content (``reconciler.inputs``: digests of its
   ``file://`` model, tokenizer and datasets, from the cache when unchanged);
4. a backend that can (``Preflighter``) checks what would fail before the run's first step
   (the local backend: input files, dataset columns, launcher packages, room to save); its
   errors are the spec's, at their fields, and stop plan and apply.

Nothing here prints: diagnostics come back placed, for the CLI to render.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ftspec.compiler.pipeline import Compiled, CompileOptions, SpecInput, compile_spec
from ftspec.reconciler.backend import (
    Backend,
    BackendError,
    Desired,
    Prefetcher,
    Preflighter,
    SweepPlace,
)
from ftspec.reconciler.backends import BackendOptions, backend_name, get_backend
from ftspec.reconciler.identity import duplicates
from ftspec.spec.diagnostics import Diagnostic


@dataclass(frozen=True)
class Prepared:
    backend: Backend | None
    desired: tuple[Desired, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.backend is not None and not any(d.is_error for d in self.diagnostics)


def with_namespace(sets: tuple[str, ...], namespace: str | None) -> tuple[str, ...]:
    """``--namespace NS`` is one more ``--set`` (so its diagnostics point at the flag)."""
    return (*sets, f"metadata.namespace={namespace}") if namespace else sets


def prepare(inputs: Sequence[SpecInput], options: BackendOptions, *,
            identity_only: bool = False, preflight: bool = True) -> Prepared:
    base = CompileOptions(schema="on-error")
    places: dict[int, SweepPlace] = {}  # id() of a point's Compiled -> its place
    first = _expanded(inputs, base, places)
    failed = [d for c in first if not c.ok
              for d in (c.diagnostics if identity_only else _failed(c, base))]
    if failed:
        return Prepared(None, (), tuple(failed))
    jobs = [c.job for c in first if c.job is not None]
    twice = duplicates([_desired(c) for c in first])
    if twice:  # two specs, one job: refused where the second one declares it
        return Prepared(None, (), tuple(twice))
    names = {backend_name(job.target) for job in jobs}
    if len(names) > 1:
        raise BackendError(f"these specs use different backends ({', '.join(sorted(names))})",
                           hint="plan or apply specs of one deploy.target family at a time")
    backend = get_backend(names.pop(), options)
    if identity_only:
        return Prepared(backend, tuple(_desired(c, place=places.get(id(c))) for c in first))
    early = backend if isinstance(backend, Prefetcher) else None
    done: list[tuple[Compiled, Desired | None]] = []
    try:
        opts = backend.compile_options(jobs, base)
        root = _root(backend)
        for each in first:  # a spec's live reads start while the next one compiles
            compiled = compile_spec(each, "artifacts", opts)
            ready = _desired(compiled, root, places.get(id(each))) if compiled.ok else None
            done.append((compiled, ready))
            if early is not None and ready is not None:
                early.prefetch(ready)  # the same Desired goes to the plan
    except BaseException:
        if early is not None:
            early.drop_prefetched()
        raise
    errors = tuple(d for c, _ in done for d in c.errors)
    if not errors and preflight and isinstance(backend, Preflighter):  # what would fail before step 1
        errors = tuple(d for _, ready in done if ready is not None
                       for d in backend.preflight(ready) if d.is_error)
    if errors:
        if early is not None:
            early.drop_prefetched()
        return Prepared(backend, (), errors)
    return Prepared(backend, tuple(ready for _, ready in done if ready is not None))


def _expanded(inputs: Sequence[SpecInput], base: CompileOptions,
              places: dict[int, SweepPlace]) -> list[Compiled]:
    """Each spec compiled to its identity, a sweep as one spec per point; ``places`` gets
    each point's place in its sweep (keyed by ``id`` of the point's ``Compiled``)."""
    from ftspec.compiler.sweep import expand, max_parallel_of

    out: list[Compiled] = []
    for src in inputs:
        spec = compile_spec(src, "identity", base)
        points = expand(spec, "identity", base)
        if spec.job is not None and points and points[0] is not spec:
            limit = max_parallel_of(spec)
            for i, point in enumerate(points):
                places[id(point)] = SweepPlace(spec.job.spec_id, i, len(points), limit)
        out += points
    return out


def _failed(compiled: Compiled, options: CompileOptions) -> tuple[Diagnostic, ...]:
    """What a spec that fails lists: its validation errors and, where its Job could still
    be derived, its deploy target's errors too (what ``compile`` lists for it). A sweep
    point keeps its own findings, named after it (``compiler/sweep.py``)."""
    if compiled.job is None or compiled.source.point is not None:
        return compiled.diagnostics
    return compile_spec(compiled, "artifacts", options).diagnostics


def _desired(compiled: Compiled, root: Path | None = None,
             place: SweepPlace | None = None) -> Desired:
    """``compiled`` as a desired state; with ``root`` (where relative ``file://`` paths
    start), the content of every input it reads too (``reconciler.inputs``)."""
    from ftspec.reconciler.inputs import states

    job = compiled.job
    assert job is not None
    return Desired(job=job, artifacts=compiled.artifacts, spec_file=str(compiled.source.path),
                   doc=compiled.doc, inputs=() if root is None else states(job, root),
                   sweep=place)


def _root(backend: object) -> Path:
    """Where the backend's relative ``file://`` paths start: its project root, else the
    working directory."""
    root = getattr(backend, "root", None)
    return root if isinstance(root, Path) else Path.cwd()


def load_desired(inputs: Sequence[SpecInput], options: BackendOptions | None = None
                 ) -> tuple[Backend, list[Desired]]:
    """``prepare`` for callers that want an exception, not diagnostics (tests, scripts)."""
    prepared = prepare(inputs, options or BackendOptions())
    if not prepared.ok or prepared.backend is None:
        raise BackendError("; ".join(d.format() for d in prepared.diagnostics))
    return prepared.backend, list(prepared.desired)

