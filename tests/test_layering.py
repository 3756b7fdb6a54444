"""The import layering of DESIGN.md, checked on the source (AST), not by review.

spec imports nothing of ours; targets import spec; compiler imports spec and targets;
reconciler imports spec, compiler and targets; cli imports everything. Dynamic imports
(``importlib.import_module("ftspec.x...")`` with a literal prefix) count too.

runtime (the code that runs inside training jobs) imports nothing but itself, so a job's
image needs no compile-time module; targets, compiler, reconciler and cli import only
runtime's contract modules (``RUNTIME_CONTRACTS``: the formats both sides agree on, standard
library only), never the entrypoints themselves; spec imports none of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED: dict[str, frozenset[str]] = {
    "spec": frozenset({"spec"}),
    "targets": frozenset({"targets", "spec", "runtime"}),
    "compiler": frozenset({"compiler", "spec", "targets", "runtime"}),
    "reconciler": frozenset({"reconciler", "spec", "compiler", "targets", "runtime"}),
    "cli": frozenset({"cli", "spec", "compiler", "targets", "reconciler", "schemas", "runtime"}),
    "schemas": frozenset({"schemas"}),
    "runtime": frozenset({"runtime"}),
}
RUNTIME_CONTRACTS = frozenset({"ftspec.runtime.ray_nodes.wire", "ftspec.runtime.unpack",
                               "ftspec.runtime.stop_line", "ftspec.runtime.unfrozen"})
"""The runtime modules compile-time code may import."""


def _imported(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """Absolute ``ftspec.*`` module names imported by a file, with their lines."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value))
            elif isinstance(arg, ast.JoinedStr) and arg.values:
                head = arg.values[0]
                if isinstance(head, ast.Constant) and isinstance(head.value, str):
                    found.append((node.lineno, head.value.rstrip(".")))
    return [(line, name) for line, name in found if name.startswith("ftspec.")]


def violations(root: Path) -> list[str]:
    out: list[str] = []
    for package, allowed in ALLOWED.items():
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            module = "ftspec." + ".".join(rel.with_suffix("").parts)
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for line, name in _imported(tree, module):
                target = name.split(".")[1] if name.count(".") >= 1 else ""
                contract_only = target == "runtime" and package != "runtime"
                if target not in allowed or contract_only and name not in RUNTIME_CONTRACTS:
                    out.append(f"{rel}:{line}: {package} may not import {name}")
    return out


def test_packages_respect_the_layering() -> None:
    assert violations(ROOT) == []


def test_the_checker_finds_violations(tmp_path: Path) -> None:
    for package in ALLOWED:
        (tmp_path / package).mkdir()
    (tmp_path / "spec" / "ok.py").write_text("from ftspec.spec.loader import parse_yaml\n")
    (tmp_path / "spec" / "bad.py").write_text(
        "import os\n\ndef f():\n    from ftspec.compiler.build import build_job\n"
    )
    (tmp_path / "targets" / "rel.py").write_text("from ..reconciler import model\n")
    (tmp_path / "compiler" / "dyn.py").write_text(
        "import importlib\nimportlib.import_module(f'ftspec.cli.commands.{x}')\n"
    )
    (tmp_path / "cli" / "fine.py").write_text("import ftspec.reconciler.model\n")
    (tmp_path / "targets" / "wire.py").write_text(
        "from ftspec.runtime.ray_nodes.wire import fill\nfrom ftspec.runtime.hf_sft import main\n"
    )
    (tmp_path / "spec" / "wire.py").write_text("from ftspec.runtime.unpack import UNPACK\n")
    (tmp_path / "runtime" / "up.py").write_text(
        "from ftspec.runtime.unpack import UNPACK\nfrom ftspec.targets.ray_nodes import bundle\n"
    )
    assert violations(tmp_path) == [
        "spec/bad.py:4: spec may not import ftspec.compiler.build",
        "spec/wire.py:1: spec may not import ftspec.runtime.unpack",
        "targets/rel.py:1: targets may not import ftspec.reconciler",
        "targets/wire.py:2: targets may not import ftspec.runtime.hf_sft",
        "compiler/dyn.py:2: compiler may not import ftspec.cli.commands",
        "runtime/up.py:2: runtime may not import ftspec.targets.ray_nodes",
    ]
