"""``deploy.target`` -> backend factory, in one place. Backends import lazily."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from ftspec.reconciler.backend import Backend, BackendError
from ftspec.spec.platforms import PLATFORMS


@dataclass(frozen=True)
class BackendOptions:
    kubeconfig: str | None = None
    context: str | None = None
    force_conflicts: bool = False
    check_data: bool = False
    """``plan --check-data``: the local backend checks every row of its local datasets."""


BACKENDS: dict[str, str] = {
    "kubernetes": "ftspec.reconciler.kubernetes.backend",
    "ray": "ftspec.reconciler.ray.backend",
    "local": "ftspec.reconciler.local.backend",
}
"""Backend name -> its module (which defines ``make_backend``); which ``deploy.target``
uses which backend is ``ftspec.spec.platforms.PLATFORMS``."""


def backend_name(target: str) -> str:
    try:
        return PLATFORMS[target].backend
    except KeyError:
        raise BackendError(f"unknown deploy.target {target!r}; one of: "
                           f"{', '.join(PLATFORMS)}") from None


def get_backend(name_or_target: str, options: BackendOptions) -> Backend:
    """A backend by its name (``kubernetes``) or by a ``deploy.target`` value."""
    platform = PLATFORMS.get(name_or_target)
    name = platform.backend if platform is not None else name_or_target
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name_or_target!r}")
    module_name, factory_name = BACKENDS[name], "make_backend"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("ftspec.reconciler"):
            raise BackendError(
                f"the {name!r} backend is not available in this build of ftspec "
                f"(module {module_name} is missing)",
                hint="use a deploy.target whose backend is installed",
            ) from None
        raise BackendError(f"the {name!r} backend needs the Python package {exc.name!r}",
                           hint=f"pip install 'ftspec[{name}]'") from None
    factory: Callable[[BackendOptions], Backend] = getattr(module, factory_name)
    return factory(options)
