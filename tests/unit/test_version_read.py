"""ftspec's own version is read from the file its install wrote (``reconciler/_version.py``,
setuptools-scm's ``version_file``) and, without that file, from the installed distribution
(``reconciler.applied.ftspec_version``)."""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from ftspec.reconciler.applied import ftspec_version

WRITTEN = Path(__file__).resolve().parents[2] / "reconciler" / "_version.py"


def test_the_version_is_the_one_the_install_wrote() -> None:
    assert WRITTEN.is_file(), "the install (pip install -e .) writes reconciler/_version.py"
    found = re.search(r"^__version__ = version = '([^']+)'$", WRITTEN.read_text(), re.MULTILINE)
    assert found is not None
    assert ftspec_version() == found.group(1)


def test_without_the_file_the_installed_distribution_says_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ftspec.reconciler._version", None)  # ImportError
    try:
        installed = version("ftspec")
    except PackageNotFoundError:
        installed = "0+unknown"
    assert ftspec_version() == installed
