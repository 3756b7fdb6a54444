"""One table each for dtypes (``spec/dtypes.py``) and a decoder block's MLP module names
(``spec/module_names.py``): read from the source (AST), a second copy of either fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ftspec.spec.dtypes import BYTES, DTYPES, FROM_TORCH, STORAGE_FROM_TORCH, TORCH_NAMES
from ftspec.spec.module_names import ATTENTION_MODULES, LINEAR_MODULES, MLP_MODULES

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("spec", "compiler", "targets", "reconciler", "cli")
TORCH = frozenset(f.torch for f in DTYPES.values() if f.floating)


def _strings(nodes: list[ast.expr | None]) -> set[str]:
    return {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def copies(root: Path) -> dict[str, list[str]]:
    """Where a literal spells the dtype table (a dict with two torch dtype names among its
    keys or values) or the MLP module list (a collection of all three MLP names)."""
    out: dict[str, list[str]] = {"dtypes": [], "mlp": []}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Dict) and (
                        len(_strings(node.keys) & TORCH) >= 2
                        or len(_strings(node.values) & TORCH) >= 2):
                    out["dtypes"].append(where)
                if isinstance(node, ast.Tuple | ast.List | ast.Set) and \
                        set(MLP_MODULES) <= _strings(list(node.elts)):
                    out["mlp"].append(where)
    return out


@pytest.mark.slow
def test_the_tables_are_spelled_once() -> None:
    # spec/dtypes.py spells its names in DtypeFacts rows, which are no dict of names
    assert copies(ROOT) == {"dtypes": [], "mlp": ["spec/module_names.py:12"]}


def test_the_scan_finds_a_copy(tmp_path: Path) -> None:
    (tmp_path / "targets").mkdir()
    (tmp_path / "targets" / "x.py").write_text(
        'A = {"bf16": "bfloat16", "fp16": "float16"}\nB = frozenset({"gate_proj", "up_proj",'
        ' "down_proj"})\nC = {"bfloat16": 2}\n')
    assert copies(tmp_path) == {"dtypes": ["targets/x.py:1"], "mlp": ["targets/x.py:2"]}


def test_the_derived_views_agree() -> None:
    assert TORCH_NAMES == {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32",
                           "uint8": "uint8"}
    assert FROM_TORCH == {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
    assert STORAGE_FROM_TORCH == {**FROM_TORCH, "uint8": "uint8"}
    assert BYTES == {"bf16": 2, "fp16": 2, "fp32": 4, "uint8": 1}
    assert LINEAR_MODULES == (*ATTENTION_MODULES, *MLP_MODULES)
