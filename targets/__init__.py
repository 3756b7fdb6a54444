"""ftspec.targets: one module per compile target, behind the ``Target`` protocol; launchers
(``Launcher``, ``targets.launcher``) are compile targets too.

Module name = registry key = ``--target`` value. Each module defines ``TARGET`` annotated
``Target`` (a launcher's: ``Launcher``), so mypy proves every target complete. Modules are
imported on first use so start-up only pays for the target it compiles.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ftspec.spec.platforms import COMPILE_TARGETS, LAUNCHERS
from ftspec.targets.base import Target

if TYPE_CHECKING:
    from ftspec.targets.launcher import Launcher

__all__ = ["LAUNCHERS", "TARGET_NAMES", "get_launcher", "get_target", "registry"]

TARGET_NAMES: tuple[str, ...] = COMPILE_TARGETS


def get_target(name: str) -> Target:
    if name not in TARGET_NAMES:
        raise KeyError(name)
    module = importlib.import_module(f"ftspec.targets.{name}")
    target: Target = module.TARGET
    return target


def get_launcher(name: str) -> Launcher:
    """The launcher ``name`` (a ``launcher`` value)."""
    if name not in LAUNCHERS:
        raise KeyError(name)
    module = importlib.import_module(f"ftspec.targets.{name}")
    launcher: Launcher = module.TARGET
    return launcher


def registry() -> dict[str, Target]:
    """Every target, imported (tests and `ftspec compile --help`)."""
    return {name: get_target(name) for name in TARGET_NAMES}
