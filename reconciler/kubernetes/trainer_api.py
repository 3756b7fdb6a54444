"""Which Trainer API the cluster serves, read from its TrainJob CRD and kept between runs.

Every plan of a TrainJob renders for the Trainer API the cluster serves (``v2.1``:
``podTemplateOverrides``; ``v2.2``: ``runtimePatches``), which only the TrainJob CRD's
schema says. That CRD is about 190 KB of JSON; reading and checking it was the largest part
of a plan of unchanged specs (the server's 40 ms to send it, 15 ms to parse it within the
answers' limits, on a 2-core machine). So a plan first reads the CRD's metadata alone (a
``PartialObjectMetadata`` of a few hundred bytes, the same ``get`` permission) and takes
the answer kept for that very CRD: its ``uid`` (a new one when it is created again) and its
``resourceVersion`` (a new one on every write to it), with the source of the function that
reads the answer. Anything else (no entry, another CRD or rule, a server that does not
answer with metadata alone) reads the whole CRD as before and keeps its answer. The whole
CRD is still read where a plan checks an object against the CRD's rules
(``crd_check.CrdRules``): only for an object that changed.

Entries are in ``$FTSPEC_CACHE_DIR/trainer-api`` (``compiler.cache.folder``), written and
read as the compile cache's are (``compiler.cache_files``: private files in folders nobody
else may write, opened without following links); an entry holds the digest of its key and
one of the two API names, is checked for both, and any trouble is a miss, never an error.
``FTSPEC_COMPILE_CACHE=off`` (a cold plan, as on a fresh runner) reads the whole CRD.

Our own code: no library keeps a fact of a Kubernetes object keyed by its identity and
version in a folder safe from other users; the key's parts are this read's.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

from ftspec.reconciler.kubernetes.render import trainer_version_from_crd
from ftspec.spec.platforms import OVERRIDES_TRAINER, PATCHES_TRAINER

FORMAT = 1
"""Bumped when what an entry holds changes shape."""
SUFFIX = ".trainer.json"


@cache
def _reader_source() -> str:
    """The digest of the code that reads the API from a CRD (``render.py``)."""
    from ftspec.reconciler.kubernetes import render

    return hashlib.sha256(Path(str(render.__file__)).read_bytes()).hexdigest()


def key_of(name: str, meta: dict[str, Any]) -> str | None:
    """The key of what CRD ``name`` with metadata ``meta`` says; None where the metadata
    lacks its identity (then nothing is kept or recalled)."""
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    if not (isinstance(uid, str) and uid and isinstance(version, str) and version):
        return None
    text = json.dumps([FORMAT, _reader_source(), name, uid, version])
    return hashlib.sha256(text.encode()).hexdigest()


def enabled() -> bool:
    """Whether answers are kept (the compile cache's switch): when not, a plan reads the
    whole CRD without asking for its metadata first."""
    from ftspec.compiler import cache

    return cache.enabled()


def _folder() -> Path | None:
    from ftspec.compiler import cache

    return cache.folder("trainer-api") if cache.enabled() else None


def recall(name: str, meta: dict[str, Any]) -> str | None:
    """The Trainer API kept for CRD ``name`` as ``meta`` identifies it, or None."""
    from ftspec.compiler import cache_files

    key = key_of(name, meta)
    if key is None:
        return None
    entry = cache_files.read_json_entry(_folder(), key + SUFFIX)
    if entry is None or entry.get("key") != key:
        return None
    api = entry.get("trainer")
    return api if api in (PATCHES_TRAINER, OVERRIDES_TRAINER) else None


def served(name: str, crd: dict[str, Any]) -> str:
    """The Trainer API the whole CRD ``crd`` serves, kept under its identity."""
    from ftspec.compiler import cache_files

    api = trainer_version_from_crd(crd)
    key = key_of(name, crd.get("metadata") or {})
    folder = _folder()
    where = None if key is None or folder is None else cache_files.safe_folder(
        folder, create=True)
    if where is None or key is None:
        return api
    try:
        cache_files.write_new(where, key + SUFFIX,
                              json.dumps({"key": key, "trainer": api}).encode())
        cache_files.prune(where, (SUFFIX,))
    except OSError:  # a cache that cannot write is only slower
        pass
    return api
