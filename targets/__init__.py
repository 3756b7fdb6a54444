"""ftspec.targets: one module per compile target, behind the ``Target`` protocol.

Module name = registry key = ``--target`` value. Each module defines ``TARGET``. Modules
are imported on first use so start-up only pays for the target it compiles.
"""

from __future__ import annotations

import importlib

from ftspec.spec.platforms import COMPILE_TARGETS, LAUNCHERS
from ftspec.targets.base import Target

__all__ = ["LAUNCHERS", "TARGET_NAMES", "get_target", "registry"]

TARGET_NAMES: tuple[str, ...] = COMPILE_TARGETS


def get_target(name: str) -> Target:
    if name not in TARGET_NAMES:
        raise KeyError(name)
    module = importlib.import_module(f"ftspec.targets.{name}")
    target: Target = module.TARGET
    return target


def registry() -> dict[str, Target]:
    """Every target, imported (tests and `ftspec compile --help`)."""
    return {name: get_target(name) for name in TARGET_NAMES}
