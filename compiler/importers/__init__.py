"""``ftspec import TOOL FILE``: other tools' configs as ftspec specs.

One module per tool behind one function type (:data:`Importer`); the registry's key is the
``TOOL`` argument. Shared pieces: ``base`` (the draft spec, origins, warnings, the
not-this-tool error) and ``render`` (YAML with ``# from FILE:LINE`` comments).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import Imported, NotThisTool


@dataclass(frozen=True)
class ImportOptions:
    """What the source file does not say: the launch topology and the machine."""

    nproc_per_node: int | None = None
    nnodes: int | None = None
    """None: what the config's name says (``_multinode``: 2), else 1."""
    accelerator: str = "nvidia-a100-80gb"
    job: Path | None = None
    """oumi: the job config (``--job``) whose resources the run gets."""
    launch: Path | None = None
    """llamafactory: the script that launches the config (``--launch``)."""
    accelerate_config: Path | None = None
    """llamafactory: the accelerate config it runs under (``--accelerate-config``)."""


Importer = Callable[[Path, tuple[str, ...], ImportOptions], Imported]


def _topology(opts: ImportOptions) -> dict[str, Any]:
    """What every tool's importer takes from the options: the launch topology and machine."""
    return {"nproc": opts.nproc_per_node, "nnodes": opts.nnodes, "accelerator": opts.accelerator}


def _whole_file(tool: str, module: str, function: str) -> Importer:
    """The importer of a tool whose config file is all it reads (no ``KEY=VALUE`` arguments):
    ``function(path, nproc=, nnodes=, accelerator=)`` of ``importers/<module>.py``, imported
    when the tool is used."""
    def run(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
        from ftspec.compiler.importers.base import unexpected_args

        unexpected_args(tool, args)
        imported: Imported = getattr(import_module(f"{__name__}.{module}"), function)(
            path, **_topology(opts))
        return imported

    return run


def _torchtune(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.torchtune import import_torchtune

    return import_torchtune(path, args, **_topology(opts))


def _oumi(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.oumi import import_oumi

    return import_oumi(path, args, job=opts.job, **_topology(opts))


def _trainjob(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.base import unexpected_args
    from ftspec.compiler.importers.trainjob import import_trainjob_doc
    from ftspec.compiler.importers.trainjob_source import load_trainjob

    unexpected_args("trainjob", args)
    from dataclasses import replace

    from ftspec.compiler.importers.trainjob_source import other_objects

    imported = import_trainjob_doc(load_trainjob(path), accelerator=opts.accelerator)
    return replace(imported, warnings=imported.warnings + tuple(other_objects(path)))


def _llamafactory(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.base import unexpected_args
    from ftspec.compiler.importers.llamafactory import import_llamafactory

    unexpected_args("llamafactory", args)
    return import_llamafactory(path, launch=opts.launch,
                               accelerate_config=opts.accelerate_config, **_topology(opts))


IMPORTERS: dict[str, Importer] = {
    "torchtune": _torchtune,
    "trl": _whole_file("trl", "trl", "import_trl"),
    "trainjob": _trainjob,
    "oumi": _oumi,
    "axolotl": _whole_file("axolotl", "axolotl", "import_axolotl"),
    "llamafactory": _llamafactory,
}
TOOL_NAMES: tuple[str, ...] = tuple(IMPORTERS)

__all__ = ["IMPORTERS", "TOOL_NAMES", "ImportOptions", "Imported", "Importer", "NotThisTool"]
