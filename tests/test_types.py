"""mypy --strict over the whole package, as it is installed (``ftspec.<folder>``).

The folders map onto ``ftspec.*`` through setuptools' package-dir, which mypy cannot follow
in an editable install; the test lays the folders out as the wheel does (symlinks under a
temporary ``ftspec/``) and checks that tree.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spec", "compiler", "targets", "runtime", "reconciler", "cli", "schemas")


@pytest.mark.slow
def test_package_passes_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is in the [dev] extra")
    pkg = tmp_path / "ftspec"
    pkg.mkdir()
    for name in PACKAGES:
        (pkg / name).symlink_to(ROOT / name, target_is_directory=True)
    cache = Path.home() / ".cache" / "ftspec" / "mypy"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--namespace-packages",
         "--explicit-package-bases", "--ignore-missing-imports", "--cache-dir", str(cache),
         "-p", "ftspec"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout
