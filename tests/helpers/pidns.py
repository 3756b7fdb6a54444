"""Tests that can signal processes run in a private PID (and mount) namespace.

``@private_pid_namespace`` re-runs the decorated test in a fresh pytest under
``unshare --pid --fork --mount-proc`` (root, Linux), so a regression that signals the
wrong process group (``kill(-1)`` included) can only reach processes inside that namespace:
the inner pytest is its PID 1, and when it exits the kernel ends everything left in it.
The outer test passes only when the inner run passed (a skip inside is reported as a
failure, never counted as a pass). The private mount namespace also lets a test mount a
small tmpfs (a full disk). Each such test starts a second pytest, a process for seconds, so
the decorator marks it ``slow`` (out of the fast loop; the full suite runs it).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

INSIDE = "FTSPEC_TEST_PRIVATE_PIDNS"
ROOT = Path(__file__).resolve().parents[2]
F = TypeVar("F", bound=Callable[..., Any])


def inside() -> bool:
    """True in the inner pytest (PID 1 of its own namespace)."""
    return os.environ.get(INSIDE) == "1" and os.getpid() == 1


def _can_unshare() -> bool:
    return sys.platform == "linux" and os.geteuid() == 0 and shutil.which("unshare") is not None


def private_pid_namespace(test: F) -> F:
    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if inside():
            return test(*args, **kwargs)
        if not _can_unshare():
            pytest.skip("needs root and unshare(1): a test that signals processes runs only "
                        "in a private PID namespace")
        node = os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]
        env = {**os.environ, INSIDE: "1"}
        # its own base temp: the inner pytest must not prune the outer one's numbered dirs
        basetemp = tempfile.mkdtemp(prefix="pidns-")
        try:
            done = subprocess.run(
                ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m", "pytest",
                 node, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-rs",
                 f"--basetemp={basetemp}/t"],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
        finally:
            shutil.rmtree(basetemp, ignore_errors=True)
        out = done.stdout + done.stderr
        assert done.returncode == 0 and " passed" in out and "skipped" not in out, out[-6000:]
        return None

    return pytest.mark.slow(wrapper)  # type: ignore[no-any-return]


def mount_tmpfs(where: Path, size: str) -> None:
    """A small tmpfs at ``where`` (inside the private mount namespace only)."""
    assert inside(), "mount only in the private namespace"
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                   check=True)
