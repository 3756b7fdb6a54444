"""Content identity of what a job reads: its model, tokenizer, datasets and checkpoint.

A plan that says "No changes" means the same data and weights, not only the same paths.
Every ``file://`` input a job reads gets the SHA-256 of its bytes (a folder: of its files'
relative paths and digests; a dataset also its row count where ``datapeek.count_rows``
counts them), recorded with the applied run (``reconciler.applied``) and compared at
``plan`` (``changed``): a different digest plans a replace whose ML line names the input,
the old and new digests and rows. Other inputs say what is known of them (``unchecked``):
an ``hf://`` model its revision (pinned only when it is a commit), ``pvc://`` and object
stores that the content is not read from here; a spec that sets ``identity: path`` on an
input keeps the path-only behaviour, and the plan says it was not checked.

A digest is computed once per file state: entries in the user's cache folder
(``$FTSPEC_CACHE_DIR/digests``, written and read as the compile cache's are, by
``compiler.cache_files``: private files in folders nobody else may write) are keyed by the
file's path, device, inode, size, modification and change times (the change time cannot be
set back by a user), so a warm plan reads no input and an edit in place is a miss
(``FTSPEC_DIGEST_CACHE=off``: every plan reads every input). Hidden
entries of a folder (``.git``, ``.cache``: a hub download's bookkeeping) are not part of
its content; links to files are read through, links to folders are recorded by target.

Our own code: ``hashlib`` hashes; no library keeps digests by file state in a cache safe
from other users, and the walk's rules (what a model folder's content is) are ours.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ftspec.reconciler.model import FieldChange
from ftspec.spec.ir import Job
from ftspec.spec.urls import rest, scheme

CHUNK = 1 << 20
MAX_FOLDER_FILES = 10_000
"""A folder with more files is not checked (the plan says so)."""
SHOWN_HEX = 12
"""Hex digits of a digest a plan shows."""
ENTRY_SUFFIX = ".digest.json"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class InputState:
    """What is known of one input: its content digest, or why it is not checked."""

    field: str
    """The spec's key path, dotted (``data.train.uri``)."""
    uri: str
    sha256: str | None = None
    rows: int | None = None
    revision: str | None = None
    """An ``hf://`` model's ``model.revision`` (None: the hub's current ``main``)."""
    unchecked: str | None = None
    """Why the content is not compared (None when ``sha256`` is set)."""

    def shown(self) -> str:
        """``sha256:1a2b3c4d5e6f (64 rows)``."""
        text = f"sha256:{self.sha256[:SHOWN_HEX]}" if self.sha256 else "unknown"
        return text + (f" ({self.rows} rows)" if self.rows is not None else "")

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": self.uri}
        for key in ("sha256", "rows", "revision"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def from_record(data: Any) -> dict[str, InputState]:
    """The inputs an applied record holds (untrusted: entries of the wrong shape dropped)."""
    out: dict[str, InputState] = {}
    if not isinstance(data, dict):
        return out
    for key, raw in data.items():
        if not (isinstance(key, str) and isinstance(raw, dict)
                and isinstance(raw.get("uri"), str)):
            continue
        digest, rows, revision = raw.get("sha256"), raw.get("rows"), raw.get("revision")
        out[key] = InputState(
            key, raw["uri"],
            sha256=digest if isinstance(digest, str) and _SHA256.fullmatch(digest)
            else None,
            rows=rows if type(rows) is int and rows >= 0 else None,
            revision=revision if isinstance(revision, str) else None)
    return out


@dataclass(frozen=True)
class InputChange:
    """An input whose content differs from what the applied run read."""

    before: InputState
    after: InputState

    def line(self) -> str:
        """The plan's ML line."""
        where = (self.after.uri if self.before.uri == self.after.uri
                 else f"{self.before.uri} -> {self.after.uri}")
        return (f"{_what(self.after.field)} {self.after.field} ({where}) content changed: "
                f"{self.before.shown()} -> {self.after.shown()}")


def changed(recorded: Mapping[str, InputState] | None, now: Iterable[InputState]
            ) -> tuple[InputChange, ...]:
    """The inputs read now whose digest differs from the one recorded when the run was
    applied. An input without a digest on either side (not checked then, or now; an ftspec
    that recorded none) cannot be compared and is not a change."""
    if not recorded:
        return ()
    out = []
    for state in now:
        old = recorded.get(state.field)
        if old is not None and old.sha256 and state.sha256 and old.sha256 != state.sha256:
            out.append(InputChange(old, state))
    return tuple(out)


def as_fields(changes: Iterable[InputChange]) -> tuple[FieldChange, ...]:
    """The changed inputs as plan field rows (``inputs.data.train.uri``); each forces a
    replace: the run trained on other bytes."""
    return tuple(FieldChange(f"inputs.{c.after.field}", c.before.shown(), c.after.shown(), True)
                 for c in changes)


def reason(changes: tuple[InputChange, ...]) -> str:
    """The plan's reason for a replace that only changed inputs force."""
    names = ", ".join(c.after.field for c in changes)
    return (f"the content of {names} changed since the run was applied: a new run trains "
            "on the bytes there now")


def warnings(address: str, states: Iterable[InputState]) -> list[str]:
    """One plan warning per input whose content the plan cannot compare."""
    return [f"{address}: {s.field} {s.uri}: content not checked ({s.unchecked})"
            for s in states if s.unchecked]


def _what(field: str) -> str:
    if field.startswith("data."):
        return "dataset"
    if field.startswith("training."):
        return "checkpoint"
    return "tokenizer" if ".tokenizer." in field else "model"


# ---------------------------------------------------------------------- reading

def states(job: Job, root: Path) -> tuple[InputState, ...]:
    """What is known of each input ``job`` reads; relative ``file://`` paths from ``root``.
    Read from the IR (``Job.inputs``), so a warm plan validates no spec for it."""
    return tuple(_state(ref.field, ref.uri, ref.identity, ref.revision, root, ref.loader)
                 for ref in job.inputs)


def _state(field: str, uri: str, identity: str, revision: str | None, root: Path,
           loader: str | None) -> InputState:
    kind = scheme(uri)
    if kind == "hf":
        if field != "model.uri":
            return InputState(field, uri, unchecked="a hub dataset is read at its current "
                              "revision when the run starts")
        if revision is None or not _COMMIT.match(revision):
            pinned = f"revision {revision!r}" if revision else "no model.revision"
            return InputState(field, uri, revision=revision, unchecked=(
                f"{pinned}, not a commit: the hub's files under it can change; pin "
                "model.revision to a 40-hex commit"))
        return InputState(field, uri, revision=revision)
    if kind != "file":
        return InputState(field, uri, unchecked=f"{kind}:// is read where the job runs, "
                          "not from this machine")
    if identity == "path":
        return InputState(field, uri, unchecked="identity: path in the spec")
    where = Path(rest(uri))
    where = where if where.is_absolute() else root / where
    try:
        digest = digest_path(where)
    except Unchecked as exc:
        return InputState(field, uri, unchecked=str(exc))
    rows = _rows(where, loader) if field.startswith("data.") else None
    return InputState(field, uri, sha256=digest, rows=rows)


def _rows(where: Path, loader: str | None) -> int | None:
    from ftspec.reconciler.local.datapeek import count_rows

    try:
        return count_rows(where, loader) if where.is_file() else None
    except OSError:
        return None


class Unchecked(Exception):
    """Why an input's content cannot be digested here."""


def digest_path(where: Path) -> str:
    """SHA-256 (hex) of a file's bytes, or of a folder's ``relative path NUL digest``
    lines in name order (hidden entries left out, links to folders by target)."""
    try:
        if where.is_file():
            return file_digest(where)
        if not where.is_dir():
            raise Unchecked(f"{where} is not on this machine" if not where.exists()
                            else f"{where} is neither a file nor a folder")
        lines = []
        for rel, kind, value in _walk(where):
            lines.append(f"{rel}\0{kind}\0{value}\n")
    except OSError as exc:
        raise Unchecked(f"{where} cannot be read: {exc.strerror or exc}") from None
    return hashlib.sha256("".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


def _walk(top: Path) -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    for folder, dirs, files in os.walk(top, onerror=_raise):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = Path(folder)
        for name in list(dirs):
            if (base / name).is_symlink():
                dirs.remove(name)
                found.append((str((base / name).relative_to(top)), "link",
                              os.readlink(base / name)))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = base / name
            if len(found) >= MAX_FOLDER_FILES:
                raise Unchecked(f"{top} holds more than {MAX_FOLDER_FILES} files")
            if not path.is_file():
                continue  # a dangling link, a socket: nothing a loader reads
            found.append((str(path.relative_to(top)), "file", file_digest(path)))
    return sorted(found)


def _raise(exc: OSError) -> None:
    raise exc


def file_digest(path: Path) -> str:
    """SHA-256 (hex) of ``path``'s bytes, from the cache when the file is as it was."""
    st = os.stat(path)
    real = os.path.realpath(path)
    state = [real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    key = hashlib.sha256(json.dumps(state).encode("utf-8", "surrogateescape")).hexdigest()
    cached = _cached(key, state)
    if cached is not None:
        return cached
    with open(path, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    if os.stat(path).st_mtime_ns == st.st_mtime_ns:  # not written while it was read
        _keep(key, state, digest)
    return digest


def _folder() -> Path | None:
    from ftspec.compiler import cache

    off = os.environ.get("FTSPEC_DIGEST_CACHE", "").lower() in ("off", "0", "false", "no")
    return None if off else cache.folder("digests")


def _cached(key: str, state: list[Any]) -> str | None:
    from ftspec.compiler import cache_files

    entry = cache_files.read_json_entry(_folder(), key + ENTRY_SUFFIX)
    if entry is None or entry.get("state") != state:
        return None
    digest = entry.get("sha256")
    return digest if isinstance(digest, str) and _SHA256.fullmatch(digest) \
        else None


def _keep(key: str, state: list[Any], digest: str) -> None:
    from ftspec.compiler import cache_files

    folder = _folder()
    where = None if folder is None else cache_files.safe_folder(folder, create=True)
    if where is None:
        return
    data = json.dumps({"state": state, "sha256": digest}).encode("utf-8", "surrogateescape")
    try:
        cache_files.write_new(where, key + ENTRY_SUFFIX, data)
        cache_files.prune(where, (ENTRY_SUFFIX,))
    except OSError:  # a cache that cannot write is only slower
        return
