"""Test-only: let torchtune 0.6.1's distributed recipes run unmodified on a CPU-only torch.

Put this directory on PYTHONPATH; Python imports `sitecustomize` at start-up in every process,
including the workers that `tune run --nnodes 1 --nproc-per-node N` starts through torchrun, so
the compiled command stays exactly what a GPU cluster would run.

On a CPU-only torch build (`torch.version.cuda` and `torch.version.hip` both None), or a GPU
build that sees no device (PyPI's default wheel on a machine without one), and only there,
three CUDA assumptions of the distributed recipes are adjusted once the module that holds
each has been imported:

1. `torch.distributed.init_process_group("cuda:nccl,cpu:gloo")`: without a GPU there is no NCCL
   process group, so any backend naming nccl becomes "gloo".
2. `torchtune.training.get_memory_stats(cpu)` raises on CPU, and the recipes call it on rank 0
   after model init regardless of device; on CPU it reports the process's peak RSS instead.
3. `training.cleanup_before_training()` calls `torch.cpu.empty_cache()` and
   `torch.cpu.reset_peak_memory_stats()`, which torch.cpu lacks; they become no-ops.

Nothing imports torch here: the hooks run only when the program imports the modules itself.
With a GPU present nothing is changed.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import resource
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

_Patch = Callable[[ModuleType], None]


def _cpu_only_torch() -> bool:
    """No GPU to train on: a CPU-only build, or a CUDA/ROCm build (PyPI's default torch wheel
    on a machine without an accelerator) that sees no device."""
    version = sys.modules["torch.version"]  # loaded by torch/__init__ before torch.distributed
    if version.cuda is None and getattr(version, "hip", None) is None:
        return True
    cuda = sys.modules.get("torch.cuda")  # imported by torch/__init__ before torch.distributed
    return cuda is not None and not cuda.is_available()


def _patch_torch_distributed(dist: Any) -> None:
    original = dist.init_process_group

    @functools.wraps(original)
    def init_process_group(backend: str | None = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(backend, str) and "nccl" in backend:
            backend = "gloo"
        return original(backend, *args, **kwargs)

    dist.init_process_group = init_process_group


def _patch_torchtune_training(training: Any) -> None:
    import torch

    original = training.get_memory_stats

    @functools.wraps(original)
    def get_memory_stats(device: Any, reset_stats: bool = True) -> dict[str, float]:
        if torch.device(device).type != "cpu":
            return dict(original(device, reset_stats))
        peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB on Linux
        return {"peak_memory_active": peak_gib, "peak_memory_alloc": peak_gib,
                "peak_memory_reserved": peak_gib}

    training.get_memory_stats = get_memory_stats
    for name in ("empty_cache", "reset_peak_memory_stats"):
        if not hasattr(torch.cpu, name):
            setattr(torch.cpu, name, lambda *args, **kwargs: None)


_PATCHES: dict[str, _Patch] = {
    "torch.distributed": _patch_torch_distributed,
    "torchtune.training": _patch_torchtune_training,
}


class _PatchingLoader(importlib.abc.Loader):
    """Delegates to the real loader, then applies the patch to the fresh module."""

    def __init__(self, loader: importlib.abc.Loader, patch: _Patch) -> None:
        self._loader = loader
        self._patch = patch

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, resource readers, ...
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        if _cpu_only_torch():
            self._patch(module)


class _AfterImportFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        patch = _PATCHES.get(fullname)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


sys.meta_path.insert(0, _AfterImportFinder())
