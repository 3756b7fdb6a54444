"""Every diagnostic code prefix the package spells is in the one table
(``ftspec.spec.diagnostic_codes.PREFIXES``): read from the source (AST), so a check that
invents a prefix fails here, not in a user's filter."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ftspec.spec.diagnostic_codes import PREFIXES, prefix_of
from ftspec.spec.diagnostics import Findings
from ftspec.spec.platforms import DEPLOY_TARGETS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("spec", "compiler", "targets", "reconciler", "cli")


def _head(node: ast.expr, constants: dict[str, str]) -> str | None:
    """The literal text a code expression starts with (None: it starts with a variable)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def spelled_codes(root: Path) -> list[tuple[str, str]]:
    """(where, code or prefix) for each ``code=...`` and ``Findings(...)`` with literal text."""
    out: list[tuple[str, str]] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                         for t in n.targets if isinstance(t, ast.Name)
                         and isinstance(n.value, ast.Constant)
                         and isinstance(n.value.value, str)}
            for node in ast.walk(tree):
                found: ast.expr | None = None
                if isinstance(node, ast.keyword) and node.arg == "code":
                    found = node.value
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                      and node.func.id == "Findings" and node.args):
                    found = node.args[0]
                head = _head(found, constants) if found is not None else None
                if head is not None:
                    out.append((f"{path.relative_to(root)}:{found.lineno}", head))  # type: ignore[union-attr]
    return out


@pytest.mark.slow
def test_every_code_the_package_spells_has_a_registered_prefix() -> None:
    codes = spelled_codes(ROOT)
    assert len(codes) > 50  # the scan reaches the package's checks
    unknown = [f"{where}: {code}" for where, code in codes
               if prefix_of(code.rstrip(".")) is None]
    assert unknown == []


def test_codes_named_by_deploy_target_have_a_prefix_each() -> None:
    """targets/kube.py spells ``f"{target}.wandb-key"``: every platform needs its prefix."""
    assert [t for t in DEPLOY_TARGETS if t not in PREFIXES] == []


def test_the_scan_and_findings_catch_an_unregistered_prefix(tmp_path: Path) -> None:
    (tmp_path / "targets").mkdir()
    (tmp_path / "targets" / "new.py").write_text(
        'CODE = "newplat.key"\nF = Findings("newlauncher")\nd(code=CODE)\nd(code=f"ray.{x}")\n')
    codes = spelled_codes(tmp_path)
    assert codes == [("targets/new.py:2", "newlauncher"), ("targets/new.py:3", "newplat.key"),
                     ("targets/new.py:4", "ray.")]
    assert [c for _, c in codes if prefix_of(c.rstrip(".")) is None] == ["newlauncher",
                                                                         "newplat.key"]
    with pytest.raises(ValueError, match="not in spec.diagnostic_codes.PREFIXES"):
        Findings("newlauncher")
    assert prefix_of("target.accelerate.lora-mlp") == "target.accelerate"
    assert prefix_of("env.torchtune.missing") == "env"
