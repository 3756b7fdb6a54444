"""``ftspec import TOOL FILE``: other tools' configs as ftspec specs.

One module per tool behind one function type (:data:`Importer`); the registry's key is the
``TOOL`` argument. Shared pieces: ``base`` (the draft spec, origins, warnings, the
not-this-tool error) and ``render`` (YAML with ``# from FILE:LINE`` comments).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


Importer = Callable[[Path, tuple[str, ...], ImportOptions], Imported]


def _torchtune(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.torchtune import import_torchtune

    return import_torchtune(path, args, nproc=opts.nproc_per_node, nnodes=opts.nnodes,
                            accelerator=opts.accelerator)


def _trl(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.base import unexpected_args
    from ftspec.compiler.importers.trl import import_trl

    unexpected_args("trl", args)
    return import_trl(path, nproc=opts.nproc_per_node, nnodes=opts.nnodes,
                      accelerator=opts.accelerator)


def _trainjob(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.base import unexpected_args
    from ftspec.compiler.importers.trainjob import import_trainjob_doc
    from ftspec.compiler.importers.trainjob_source import load_trainjob

    unexpected_args("trainjob", args)
    return import_trainjob_doc(load_trainjob(path), accelerator=opts.accelerator)


def _oumi(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.oumi import import_oumi

    return import_oumi(path, args, job=opts.job, nproc=opts.nproc_per_node, nnodes=opts.nnodes,
                       accelerator=opts.accelerator)


def _axolotl(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.axolotl import import_axolotl
    from ftspec.compiler.importers.base import unexpected_args

    unexpected_args("axolotl", args)
    return import_axolotl(path, nproc=opts.nproc_per_node, nnodes=opts.nnodes,
                          accelerator=opts.accelerator)


def _llamafactory(path: Path, args: tuple[str, ...], opts: ImportOptions) -> Imported:
    from ftspec.compiler.importers.base import unexpected_args
    from ftspec.compiler.importers.llamafactory import import_llamafactory

    unexpected_args("llamafactory", args)
    return import_llamafactory(path, nproc=opts.nproc_per_node, nnodes=opts.nnodes,
                               accelerator=opts.accelerator)


IMPORTERS: dict[str, Importer] = {"torchtune": _torchtune, "trl": _trl, "trainjob": _trainjob,
                                  "oumi": _oumi, "axolotl": _axolotl,
                                  "llamafactory": _llamafactory}
TOOL_NAMES: tuple[str, ...] = tuple(IMPORTERS)

__all__ = ["IMPORTERS", "TOOL_NAMES", "ImportOptions", "Imported", "Importer", "NotThisTool"]
