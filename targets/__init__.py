"""ftspec.targets: one module per compile target, behind the ``Target`` protocol.

Module name = registry key = ``--target`` value. Each module defines ``TARGET``. Modules
are imported on first use so start-up only pays for the target it compiles.
"""

from __future__ import annotations

import importlib

from ftspec.targets.base import Target

TARGET_NAMES: tuple[str, ...] = ("torchtune", "accelerate", "kubeflow", "kuberay", "ray")
LAUNCHERS: tuple[str, ...] = ("torchtune", "accelerate")


def get_target(name: str) -> Target:
    if name not in TARGET_NAMES:
        raise KeyError(name)
    module = importlib.import_module(f"ftspec.targets.{name}")
    target: Target = module.TARGET
    return target


def registry() -> dict[str, Target]:
    """Every target, imported (tests and `ftspec compile --help`)."""
    return {name: get_target(name) for name in TARGET_NAMES}
