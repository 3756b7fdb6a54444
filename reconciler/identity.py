"""A job's identity across file renames and the upgrade that moved it off file names.

A job is known by its ``metadata.name`` (or an explicit ``metadata.id``) plus its
namespace and target (``compiler.build.spec_id``). An earlier ftspec named a job without
``metadata.id`` by its spec file's stem, so its runs carry that id (run record file, Ray
job metadata, the ``ftspec.dev/spec-id`` label). Plan finds them here and reports a move,
never an orphan plus a create:

* ``moved``: a live run recorded under another id is this job's when the spec sets no
  ``metadata.id`` and that id is the stem of this spec file (the ftspec upgrade changed the
  id) or the stem of the file it was applied from, a file that no longer exists (the spec
  file was renamed; the caller also checks the run is this job's: same name or same run);
* ``file_move``: a run under this very id applied from another file: a rename when that
  file is gone or no longer declares this identity, a duplicate when it still does;
* ``duplicates``: two specs of one plan with one identity, refused where the second one
  declares it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ftspec.reconciler.backend import Desired
from ftspec.spec.diagnostics import Diagnostic, KeyPath, Severity
from ftspec.spec.ir import Job
from ftspec.spec.platforms import PLATFORMS


@dataclass(frozen=True)
class Moved:
    old_id: str
    why: str
    """Said in the plan: ``renamed from a.yaml`` / ``id changed from a to b by the ftspec
    upgrade``."""
    upgrade: bool = False
    """The same spec file: only the ftspec upgrade changed the id."""


def _same_file(a: str, b: str, root: Path) -> bool:
    return _at(a, root).resolve() == _at(b, root).resolve()


def _at(path: str, root: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else root / p


def file_id(spec_file: str) -> str:
    from ftspec.compiler.build import file_id as stem_id  # imports the spec models: not on
    # a warm plan's path, which only gets here when a run is recorded under another id

    return str(stem_id(spec_file))


def upgrade_reason(old_id: str, job: Job) -> str:
    return (f"id changed from {old_id!r} to {job.spec_id!r} by the ftspec upgrade (a job is "
            f"now known by its metadata.name, not by its file's name)")


def moved(job: Job, spec_file: str, owner_id: str, recorded_file: str | None,
          root: Path) -> Moved | None:
    """Whether a run recorded under ``owner_id`` (applied from ``recorded_file``) is this
    job's under the id an earlier ftspec gave it (see the module docstring)."""
    if owner_id == job.spec_id or job.spec.metadata.id:
        return None
    if owner_id == file_id(spec_file) and (
            recorded_file is None or _same_file(recorded_file, spec_file, root)):
        return Moved(owner_id, upgrade_reason(owner_id, job), upgrade=True)
    if (recorded_file and owner_id == file_id(recorded_file)
            and not _same_file(recorded_file, spec_file, root)
            and not _at(recorded_file, root).exists()):
        return Moved(owner_id, f"renamed from {recorded_file} (its id {owner_id!r}, the old "
                     f"file's name, is now {job.spec_id!r}, its metadata.name)")
    return None


def named_object_moved(job: Job, spec_file: str, owner_id: str, taken: set[str],
                       root: Path) -> Moved | None:
    """For a live object that bears this job's name (Kubernetes: same kind, namespace and
    name, so the same identity now) labelled by ftspec with another spec id: the id of
    this file an earlier ftspec gave it, or one no spec of this plan claims and no spec
    file beside this one is named after (the file was renamed)."""
    found = moved(job, spec_file, owner_id, None, root)
    if found is not None or job.spec.metadata.id or owner_id in taken:
        return found
    folder = _at(spec_file, root).parent
    if any((folder / f"{owner_id}{ext}").exists() for ext in (".yaml", ".yml")):
        return None  # that file may still be the spec that owns it
    return Moved(owner_id, f"renamed from a spec file named {owner_id} (its id, the old file's "
                 f"name, is now {job.spec_id!r}, its metadata.name)")


def declares(path: Path, job: Job) -> bool:
    """Whether the spec file at ``path`` (another file) declares ``job``'s identity. Read
    as the user wrote it (no overlays): a file that does not load declares nothing."""
    from ftspec.compiler.pipeline import SpecInput, compile_spec

    try:
        other = compile_spec(SpecInput(path, (), ()), "identity")
    except OSError:
        return False
    return other.ok and other.job is not None and _key(other.job) == _key(job)


def file_move(job: Job, spec_file: str, recorded_file: str, root: Path) -> str | None:
    """For a run under this job's own id applied from ``recorded_file``: None when it is
    this file, else ``renamed from X`` (raises ``DuplicateIdentity`` when X still declares
    this identity)."""
    if not recorded_file or _same_file(recorded_file, spec_file, root):
        return None
    other = _at(recorded_file, root)
    if other.is_file() and declares(other, job):
        raise DuplicateIdentity(recorded_file)
    return f"spec file renamed from {recorded_file}"


class DuplicateIdentity(Exception):
    def __init__(self, other_file: str) -> None:
        super().__init__(other_file)
        self.other_file = other_file


def _key(job: Job) -> tuple[str, str, str]:
    platform = PLATFORMS[job.target]
    namespace = job.namespace if platform.kubernetes else ""
    return platform.backend, namespace, job.spec_id


def identity_path(job: Job) -> KeyPath:
    return ("metadata", "id") if job.spec.metadata.id else ("metadata", "name")


def duplicate_error(d: Desired, other_file: str) -> Diagnostic:
    job = d.job
    path = identity_path(job)
    where = (f"namespace {job.namespace!r}, target {job.target}"
             if PLATFORMS[job.target].kubernetes else f"target {job.target}")
    return Diagnostic(
        Severity.ERROR,
        f"duplicate identity: {other_file} also declares the job {job.spec_id!r} ({where}); "
        "a job's identity is its metadata.name, so the two would manage one run",
        path=path, span=d.doc.span_of(path) if d.doc is not None else None,
        hint="give one of them another metadata.name (or a distinct metadata.id)",
        code="identity.duplicate")


def duplicates(desired: Sequence[Desired]) -> list[Diagnostic]:
    """An error for each spec whose identity an earlier spec of the same plan has."""
    first: dict[tuple[str, str, str], Desired] = {}
    out = []
    for d in desired:
        key = _key(d.job)
        if key in first and not _same_file(first[key].spec_file, d.spec_file, Path.cwd()):
            out.append(duplicate_error(d, first[key].spec_file))
        first.setdefault(key, d)
    return out
