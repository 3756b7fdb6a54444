"""Cached etcd data directories with the upstream CRDs and runtimes already installed.

Creating the five big upstream CRDs costs a 1.20 API server ~18 CPU-seconds (every status
update of a CRD re-builds and re-serialises the whole OpenAPI document). A cluster started
from a saved etcd data directory only loads them: about half the CPU. Snapshots live in
``<cache>/envtest/snapshots/<key>/`` where the key hashes everything that goes into them
(binary version, etcd version, CRD transform, CRD and runtime file contents).
Disable with ``FTSPEC_KUBE_SNAPSHOT=0``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from harness.crds import TRANSFORM_VERSION
from harness.kube_build import KUBE_VERSION, envtest_dir, etcd_binary

_FORMAT = "1"
KEEP = 4  # most recently used snapshots kept


def enabled() -> bool:
    return os.environ.get("FTSPEC_KUBE_SNAPSHOT", "1") != "0"


@cache
def _etcd_version() -> str:
    etcd = etcd_binary()
    if etcd is None:
        return "none"
    out = subprocess.run([str(etcd), "--version"], capture_output=True, text=True, timeout=30, check=False)
    return out.stdout.splitlines()[0] if out.stdout else "unknown"


def snapshot_key(files: Iterable[Path], extra: str = "") -> str:
    digest = hashlib.sha256(f"{_FORMAT}|{KUBE_VERSION}|{_etcd_version()}|{TRANSFORM_VERSION}|{extra}".encode())
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def _root() -> Path:
    return envtest_dir() / "snapshots"


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
