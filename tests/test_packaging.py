"""The wheel must contain every subpackage: pyproject's explicit list matches the tree."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("spec", "compiler", "targets", "runtime", "reconciler", "cli", "schemas")


def test_every_package_folder_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    on_disk = set()
    for top in MAPPED:
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            on_disk.add(".".join(("ftspec", top, *rel.parts)))
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - on_disk == set(), "these listed packages have no folder"
    mapping = config["tool"]["setuptools"]["package-dir"]
    assert {mapping[f"ftspec.{top}"] for top in MAPPED} == set(MAPPED)
