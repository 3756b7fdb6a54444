"""``deploy.target`` -> backend factory, in one place. Backends import lazily."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from ftspec.reconciler.backend import Backend, BackendError


@dataclass(frozen=True)
class BackendOptions:
    kubeconfig: str | None = None
    context: str | None = None
    force_conflicts: bool = False


# deploy.target -> (backend name, module, factory function name)
BACKENDS: dict[str, tuple[str, str, str]] = {
    "kubeflow": ("kubernetes", "ftspec.reconciler.kubernetes.backend", "make_backend"),
    "kuberay": ("kubernetes", "ftspec.reconciler.kubernetes.backend", "make_backend"),
    "ray": ("ray", "ftspec.reconciler.ray.backend", "make_backend"),
    "local": ("local", "ftspec.reconciler.local.backend", "make_backend"),
}


def backend_name(target: str) -> str:
    try:
        return BACKENDS[target][0]
    except KeyError:
        raise BackendError(f"unknown deploy.target {target!r}; one of: {', '.join(BACKENDS)}"
                           ) from None


def get_backend(name_or_target: str, options: BackendOptions) -> Backend:
    """A backend by its name (``kubernetes``) or by a ``deploy.target`` value."""
    entry = BACKENDS.get(name_or_target) or next(
        (e for e in BACKENDS.values() if e[0] == name_or_target), None)
    if entry is None:
        raise BackendError(f"unknown backend {name_or_target!r}")
    name, module_name, factory_name = entry
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
