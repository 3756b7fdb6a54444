"""The project root is found as git finds its repository (``reconciler.project``), and the
CLI keeps the meaning of the paths typed in a subfolder (``cli.project``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ftspec.cli.project import _moved
from ftspec.reconciler.project import find_root


def test_nearest_state_folder_above_is_the_root(tmp_path: Path) -> None:
    (tmp_path / ".ftspec").mkdir()
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    found = find_root(deep)
    assert found.path == tmp_path and found.found and not found.warnings
    (tmp_path / "a" / ".ftspec").mkdir()
    assert find_root(deep).path == tmp_path / "a"


def test_without_state_folder_the_start_is_the_root(tmp_path: Path) -> None:
    start = tmp_path / "x"
    start.mkdir()
    found = find_root(start)
    assert found.path == start and not found.found and not found.warnings


@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_planted_state_folder_is_never_the_root(tmp_path: Path, kind: str) -> None:
    outer = tmp_path / "outer"
    (outer / ".ftspec").mkdir(parents=True)
    inner = outer / "inner"
    start = inner / "sub"
    start.mkdir(parents=True)
    if kind == "link":
        (inner / ".ftspec").symlink_to(outer / ".ftspec")
    else:
        (inner / ".ftspec").write_text("x")
    found = find_root(start)
    assert found.path == start and not found.found
    (warning,) = found.warnings
    assert str(inner / ".ftspec") in warning
    assert ("symbolic link" if kind == "link" else "not a folder") in warning


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_state_folder_of_another_user_is_never_the_root(tmp_path: Path) -> None:
    (tmp_path / ".ftspec").mkdir()
    os.chown(tmp_path / ".ftspec", 4242, -1)
    start = tmp_path / "sub"
    start.mkdir()
    found = find_root(start)
    assert found.path == start
    assert "another user (uid 4242)" in found.warnings[0]


def test_typed_paths_keep_their_meaning_from_the_root() -> None:
    assert _moved(Path("spec.yaml"), "/p/sub", "/p") == Path("sub/spec.yaml")
    assert _moved("../examples/a.yaml", "/p/sub", "/p") == "examples/a.yaml"
    assert _moved((Path("a.yaml"), Path("/abs/b.yaml")), "/p/sub", "/p") == (
        Path("sub/a.yaml"), Path("/abs/b.yaml"))
    assert _moved("-", "/p/sub", "/p") == "-"
    assert _moved(None, "/p/sub", "/p") is None
