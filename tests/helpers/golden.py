"""pytest plugin: ``--update-golden`` rewrites golden files instead of comparing them."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN_ROOT = Path(__file__).resolve().parent.parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="Rewrite tests/golden files from the current output (review the diff).")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def check_golden(folder: Path, files: dict[str, str], update: bool) -> None:
    """Compare ``files`` (name -> content) with ``folder`` byte for byte, or rewrite it."""
    if update:
        if folder.exists():
            for old in folder.rglob("*"):
                if old.is_file() and old.relative_to(folder).as_posix() not in files:
                    old.unlink()
        for name, content in files.items():
            dest = folder / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(content.encode("utf-8"))
        return
    assert folder.is_dir(), f"no golden files in {folder}; run pytest --update-golden"
    have = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert have == sorted(files), f"{folder}: golden files {have} != produced {sorted(files)}"
    for name, content in files.items():
        expected = (folder / name).read_bytes().decode("utf-8")
        assert content == expected, f"{folder / name} differs; run pytest --update-golden"
