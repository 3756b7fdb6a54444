"""``resources``: nodes, GPUs and per-node requests."""

from __future__ import annotations

from typing import Literal

from ftspec.spec import patterns
from ftspec.spec.catalog.accelerators import ACCELERATOR_NAMES
from ftspec.spec.model.base import SpecModel
from pydantic import Field

AcceleratorName = Literal[ACCELERATOR_NAMES]  # type: ignore[valid-type]
QUANTITY = patterns.QUANTITY


class Resources(SpecModel):
    nodes: int = Field(default=1, ge=1, description="Machines (pods) the job runs on.")
    gpus_per_node: int | None = Field(
        default=None,
        ge=0,
        le=16,
        description="GPUs per node; 0 trains on CPU. Give this or `gpus`.",
    )
    gpus: int | None = Field(
        default=None,
        ge=0,
        description="Total GPUs across all nodes (spread evenly, so divisible by `nodes`); "
        "an alternative to gpus_per_node.",
    )
    accelerator: AcceleratorName | None = Field(
        default=None,
        description="GPU model; required when gpus_per_node > 0.",
    )
    cpu: str | None = Field(
        default=None, pattern=QUANTITY, description="CPU request per node (Kubernetes quantity)."
    )
    memory: str | None = Field(
        default=None, pattern=QUANTITY, description="Memory request per node, e.g. 64Gi."
    )
    processes_per_node: int | None = Field(
        default=None,
        ge=1,
        description="Training processes per node; defaults to gpus_per_node (1 on CPU).",
    )

    @property
    def gpus_on_each_node(self) -> int:
        """GPUs per node, from ``gpus_per_node`` or ``gpus / nodes``."""
        if self.gpus_per_node is not None:
            return self.gpus_per_node
        if self.gpus is not None:
            return self.gpus // self.nodes
        return 0

    @property
    def total_gpus(self) -> int:
        return self.gpus_on_each_node * self.nodes

    @property
    def procs_per_node(self) -> int:
        """Training processes per node: one per GPU, one on CPU unless set."""
        if self.processes_per_node is not None:
            return self.processes_per_node
        return self.gpus_on_each_node or 1

    @property
    def world_size(self) -> int:
        return self.procs_per_node * self.nodes
