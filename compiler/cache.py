"""Compiled specs kept between runs, keyed by everything their compilation read.

``plan`` after ``apply``, a pre-commit ``validate`` over unchanged files, a CI job planning
fifty specs: most runs compile specs that have not changed since the last run. Loading,
validating and compiling one costs milliseconds of Python; reading the answer back costs a
fraction of one. No library keeps results of arbitrary Python functions keyed by the files
they read, so this module does, in the way build caches do (record the inputs while
computing, check them all before reuse):

* The **key** names what the result is a function of besides files: the stage and compile
  options, the spec's path, overlays and ``--set`` values as given, the working folder,
  the Python running, the ftspec code (every file of its compiling packages: path, size,
  modification time) and the installed packages (the modification time of each folder on
  ``sys.path`` inside the Python environment, which changes whenever a distribution is
  installed, upgraded or removed there).
* The **entry** lists every file the compilation opened outside that code and those
  packages (the spec, its overlays, a chat template: recorded with an audit hook on the
  compiling thread), each with the SHA-256 of its content or ``None`` where it could not
  be read. An entry is used only when every one of them still hashes the same.

An entry is data, never code: one line of JSON naming what it belongs to (the format, the
key and the text the key is the digest of, the files with their digests, the digest of the
value), then the value as JSON (``ftspec.compiler.cache_codec``), rebuilt into fresh
objects on every use. It is read only when the entry names this very key and these inputs
(an entry copied over another's file is a miss) and the value still has its digest
(a truncated or altered one is a miss).

Nobody else can plant or change an entry: the folder and every folder above it must be
safe from other users, or the cache is off (``ftspec.compiler.cache_files``, which also
opens entries without following links and checks them on the descriptor).

``FTSPEC_COMPILE_CACHE=off`` turns the cache off; the folder is
``$FTSPEC_CACHE_DIR/compiled`` (default ``~/.cache/ftspec/compiled``, under
``$XDG_CACHE_HOME`` when set). Any trouble with the cache (unreadable, foreign, corrupt,
stale format, full disk) is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

FORMAT = 2
"""Bumped when what an entry holds changes shape (1: pickles, no longer read)."""

SUFFIX = ".json"

CODE_PACKAGES = ("spec", "compiler", "targets", "schemas")
"""The ftspec packages a compilation runs (the reconciler and CLI only consume it)."""

MAX_DEP_BYTES = 64 * 1024 * 1024
"""A compilation that read a larger file is not kept (hashing it would cost more than
compiling saves)."""

UNKEEPABLE = "unkeepable"

T = TypeVar("T")

Deps = tuple[tuple[str, str | None], ...]
"""Files a compilation opened: (path as opened, SHA-256 of its content or None)."""


def enabled() -> bool:
    return os.environ.get("FTSPEC_COMPILE_CACHE", "").lower() not in ("off", "0", "false",
                                                                       "no")


def folder(kind: str = "compiled") -> Path:
    """ftspec's cache folder for ``kind`` (``compiled``; ``digests``: the input digests
    of ``reconciler.inputs``; ``cel``: the CRD rules' verdicts of
    ``reconciler.kubernetes.cel_verdicts``)."""
    base = os.environ.get("FTSPEC_CACHE_DIR")
    if base:
        return Path(base) / kind
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "ftspec" / kind


@dataclass(frozen=True)
class Slot:
    """Where one compilation's result is kept, and the files it was computed from."""

    key: str
    deps: Deps = ()
    inputs: str = field(default="", compare=False, repr=False)
    """What ``key`` is the digest of (written into the entry, checked when it is read)."""


def slot_for(*parts: object) -> Slot | None:
    """The slot for a compilation whose non-file inputs are ``parts`` (None: no cache)."""
    if not enabled():
        return None
    text = repr((FORMAT, _environment(), os.getcwd(), parts))
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    return Slot(digest, inputs=text)


def load(slot: Slot, kind: type[T]) -> tuple[T, Deps] | None:
    """The value of type ``kind`` kept in ``slot`` and its files, if the entry is this
    slot's and every file still reads the same; None on any trouble."""
    from ftspec.compiler import cache_codec, cache_files

    where = cache_files.safe_folder(folder(), create=False)
    if where is None:
        return None
    raw = cache_files.read_private(os.path.join(where, slot.key + SUFFIX))
    if raw is None:
        return None
    head, _, body = raw.partition(b"\n")
    try:
        header = json.loads(head)
        if not (type(header) is dict and header.get("format") == FORMAT
                and header.get("key") == slot.key and header.get("inputs") == slot.inputs
                and header.get("value") == hashlib.sha256(body).hexdigest()):
            return None
        deps = _deps_of_header(header.get("deps"))
        if deps is None or any(_digest(name) != digest for name, digest in deps):
            return None
        value: T = cache_codec.decode(json.loads(body), kind)
        return value, deps
    except (ValueError, RecursionError, cache_codec.Unreadable):
        return None


def store(slot: Slot, value: Any, deps: Deps) -> None:
    """Keep ``value`` computed from ``deps`` in ``slot`` (silently not, on any trouble)."""
    from ftspec.compiler import cache_codec, cache_files

    if not slot.inputs or _digest_text(slot.inputs) != slot.key:
        return
    try:
        body = json.dumps(cache_codec.encode(value, type(value)), separators=(",", ":"),
                          allow_nan=True).encode("ascii")
    except (cache_codec.Unreadable, TypeError, ValueError, RecursionError):
        return
    header = {"format": FORMAT, "key": slot.key, "inputs": slot.inputs,
              "deps": [list(d) for d in deps], "value": hashlib.sha256(body).hexdigest()}
    data = json.dumps(header, separators=(",", ":")).encode("ascii") + b"\n" + body
    where = cache_files.safe_folder(folder(), create=True)
    if where is None:
        return
    try:
        cache_files.write_new(where, f"{slot.key}{SUFFIX}", data)
        cache_files.prune(where, (SUFFIX, ".pickle"))
    except OSError:  # a cache that cannot write is only slower
        return


@contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the paths of files this thread opens inside the block (outside the ftspec
    code and the installed packages, whose fingerprints are in the key)."""
    opened: list[str] = []
    _install_hook()
    _RECORDERS[threading.get_ident()] = opened
    try:
        yield opened
    finally:
        _RECORDERS.pop(threading.get_ident(), None)


def deps_of(paths: list[str], earlier: Deps = ()) -> Deps:
    """``earlier`` and each newly opened path with the digest of its content now."""
    seen = {name for name, _ in earlier}
    out = list(earlier)
    for name in dict.fromkeys(paths):
        if name not in seen:
            out.append((name, _digest(name)))
    return tuple(out)


def keepable(deps: Deps, start_ns: int) -> bool:
    """Whether a result computed from ``deps`` may be kept: every file regular and small,
    and none modified after ``start_ns`` or so shortly before that a coarse file-system
    clock cannot tell (the content read may not be the content hashed)."""
    for name, digest in deps:
        if digest == UNKEEPABLE:
            return False
        try:
            if os.stat(name).st_mtime_ns >= start_ns - RACY_NS:
                return False
        except OSError:
            continue
    return True


RACY_NS = 1_000_000_000
"""File systems with one-second timestamps round a change made during a run down by up to
this much."""

_RECORDERS: dict[int, list[str]] = {}
_HOOKED = False
_HOOK_LOCK = threading.Lock()


def _deps_of_header(data: Any) -> Deps | None:
    if type(data) is not list:
        return None
    deps = []
    for item in data:
        if not (type(item) is list and len(item) == 2 and type(item[0]) is str
                and (item[1] is None or type(item[1]) is str)):
            return None
        deps.append((item[0], item[1]))
    return tuple(deps)


def _digest_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


# ---- the files a compilation read -----------------------------------------------------


def _install_hook() -> None:
    global _HOOKED
    with _HOOK_LOCK:
        if not _HOOKED:
            sys.addaudithook(_hook)
            _HOOKED = True


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _RECORDERS:
        return
    opened = _RECORDERS.get(threading.get_ident())
    if opened is None or not args:
        return
    name = args[0]
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if isinstance(name, str) and not name.startswith(_covered()):
        opened.append(name)


def _digest(name: str) -> str | None:
    """SHA-256 of a regular file's content; None if there is none; ``UNKEEPABLE`` for what
    must not be read twice or is too large to hash cheaply (a FIFO, a device, /dev/stdin)."""
    try:
        st = os.stat(name)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_DEP_BYTES:
        return UNKEEPABLE
    try:
        with open(name, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


_COVERED: tuple[str, ...] | None = None
_ENVIRONMENT: tuple[object, ...] | None = None


def _covered() -> tuple[str, ...]:
    """Path prefixes whose files the key already fingerprints: the ftspec code, the
    installed packages and the standard library."""
    global _COVERED
    if _COVERED is None:
        roots = {str(p) for p in _code_roots()} | set(_package_dirs())
        _COVERED = tuple(sorted(r.rstrip(os.sep) + os.sep for r in roots))
    return _COVERED


def _package_dirs() -> list[str]:
    """The folders on ``sys.path`` that belong to this Python or its environment (never
    the working folder or a script's own folder: those hold the user's files)."""
    import site

    homes = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    if site.ENABLE_USER_SITE and site.USER_SITE:
        homes.append(site.USER_SITE)
    prefixes = tuple({os.path.realpath(p) + os.sep for p in homes})
    return [entry for entry in sys.path
            if entry and os.path.isdir(entry)
            and (os.path.realpath(entry) + os.sep).startswith(prefixes)]


def _code_roots() -> list[Path]:
    import importlib

    roots: list[Path] = []
    for name in CODE_PACKAGES:
        module = importlib.import_module(f"ftspec.{name}")
        roots.extend(Path(p) for p in module.__path__)
    return roots


def _environment() -> tuple[object, ...]:
    """Python, the ftspec code and the installed packages, fingerprinted (once a process)."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        code = []
        for root in _code_roots():
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for name in sorted(filenames):
                    if name.endswith((".pyc", ".pyo")):
                        continue
                    st = os.stat(os.path.join(dirpath, name))
                    code.append((os.path.join(dirpath, name), st.st_size, st.st_mtime_ns))
        packages = [(entry, os.stat(entry).st_mtime_ns) for entry in _package_dirs()]
        digest = hashlib.sha256(repr((code, packages)).encode()).hexdigest()
        _ENVIRONMENT = (sys.version, sys.executable, digest)
    return _ENVIRONMENT
