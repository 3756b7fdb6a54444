"""Cached etcd data directories with the upstream CRDs and runtimes already installed.

Creating the big upstream CRDs costs the API server several CPU-seconds (each one's schema and
CEL rules are compiled, and every status update of a CRD rebuilds the OpenAPI document). A
cluster started from a saved etcd data directory only loads them. Snapshots live in
``<cache>/apiserver-snapshots/<key>/`` where the key hashes everything that goes into them (the
control plane's build key: its pins and Go version; the CRD and runtime file contents).
Disable with ``FTSPEC_KUBE_SNAPSHOT=0``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

from harness.controlplane_build import build_key, cache_root

_FORMAT = "2"
KEEP = 4  # most recently used snapshots kept


def enabled() -> bool:
    return os.environ.get("FTSPEC_KUBE_SNAPSHOT", "1") != "0"


def snapshot_key(files: Iterable[Path], extra: str = "") -> str:
    digest = hashlib.sha256(f"{_FORMAT}|{build_key()}|{extra}".encode())
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def _root() -> Path:
    return cache_root() / "apiserver-snapshots"


def restore(key: str, data_dir: Path) -> bool:
    """Copy the snapshot ``key`` to ``data_dir`` (must not exist). False if there is none."""
    source = _root() / key
    if not source.is_dir():
        return False
    tmp = data_dir.with_name(data_dir.name + ".restoring")
    shutil.copytree(source, tmp)
    os.replace(tmp, data_dir)
    os.utime(source)  # mark as recently used
    return True


def save(key: str, data_dir: Path) -> None:
    """Store a copy of a *stopped* etcd's ``data_dir`` as snapshot ``key`` (atomic; first writer wins)."""
    root = _root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / key
    if target.exists():
        return
    tmp = root / f".{key}.{os.getpid()}.tmp"
    shutil.copytree(data_dir, tmp)
    try:
        os.rename(tmp, target)
    except OSError:  # another process saved it meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    _prune()


def _prune() -> None:
    entries = sorted(
        (p for p in _root().iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
    for stale in _root().glob(".*.tmp"):
        if time.time() - stale.stat().st_mtime > 3600:
            shutil.rmtree(stale, ignore_errors=True)
