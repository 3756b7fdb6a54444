"""``--target local`` on this machine: without a GPU the spec trains on the CPU.

The local backend refuses a spec asking for GPUs on a machine without one, so an import
aimed at ``local`` on such a machine writes ``resources.gpus_per_node: 0`` and one process
(the GPU model dropped), each a warning at the source line of the value it replaces. A GPU
is there when torch sees one (``torch.cuda.is_available()``); without torch installed, when
the machine has an NVIDIA device node, as the local backend checks.
"""

from __future__ import annotations

import glob
import importlib.util

from ftspec.compiler.importers.base import SpecDraft


def machine_has_gpu() -> bool:
    if importlib.util.find_spec("torch") is None:
        return bool(glob.glob("/dev/nvidia[0-9]*"))
    import torch

    return bool(torch.cuda.is_available())


CPU_WHY = ("this machine has no GPU (torch sees none), so the local run trains on the CPU, "
           "in one process: the same hyper-parameters and global batch, far slower")
"""What trains differently, said at each changed value."""


def cpu_changes(draft: SpecDraft) -> list[tuple[tuple[str, ...], object]]:
    """(path, value) pairs that put the spec on the CPU (``None``: the key removed); empty
    when it is already there or the machine has a GPU."""
    res = draft.get(("resources",)) or {}
    if res.get("gpus_per_node", 1) == 0 or machine_has_gpu():
        return []
    changes: list[tuple[tuple[str, ...], object]] = [(("resources", "gpus_per_node"), 0),
                                                     (("resources", "processes_per_node"), 1)]
    if "accelerator" in res:
        changes.append((("resources", "accelerator"), None))
    if (res.get("nodes") or 1) > 1:
        changes.append((("resources", "nodes"), 1))
    return changes
