"""What every launcher implements: the second plugin axis beside the platform targets.

A launcher (torchtune, accelerate/TRL, fms-hf-tuning) is the program that trains; a platform
(local, Ray, KubeRay, Kubeflow) is where it runs. Each launcher is one module
``ftspec.targets.<name>`` whose ``TARGET`` is annotated ``Launcher``, so mypy --strict rejects
a launcher that misses a method (``tests/targets/test_registry_typing.py`` proves it). Platform
targets and backends call these methods and read ``facts`` (``spec.platforms.LAUNCHER_FACTS``,
data the compiler reads too); none of them compares the launcher's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job
from ftspec.spec.platforms import LauncherFacts
from ftspec.targets.base import Launch, Target

if TYPE_CHECKING:
    from ftspec.targets.gap import Gap
    from ftspec.targets.paths import RunPaths

KubeflowStyle = Literal["torchtune-runtime", "command"]
"""How a TrainJob runs the launcher: ``torchtune-runtime`` = ``tune run`` on a torchtune
(Cluster)TrainingRuntime, fed ``key=value`` args and initializers; ``command`` = the
launcher's own command line on a named or generated runtime, its files in a ConfigMap."""


class Launcher(Target, Protocol):
    """A launcher: a compile target of its own (``check``/``compile``: its command file and
    configs) plus what the platform targets and backends ask of it."""

    @property
    def facts(self) -> LauncherFacts:
        """Its data: ``spec.platforms.LAUNCHER_FACTS[name]``."""
        ...

    @property
    def kubeflow_style(self) -> KubeflowStyle:
        ...

    def launch(self, job: Job, paths: RunPaths | None = None) -> Launch:
        """Its command line, the files it reads (by file name) and its environment."""
        ...

    def trainer_args(self, job: Job, paths: RunPaths | None = None) -> Mapping[str, Any]:
        """The trainer's own arguments as typed values, key -> value (what its config file
        or command line carries), before any rendering to text."""
        ...

    def rank_flags(self, job: Job, rank: str, addr: str, port: str) -> dict[str, str]:
        """Its multi-node flags for one node: node count, this node's ``rank``, the rank-0
        node's ``addr`` and ``port`` (placeholders a driver fills)."""
        ...

    def download_step(self, job: Job) -> list[str]:
        """A command to run before the launch on the node (fetch what it cannot read from
        a URI itself); empty when none."""
        ...

    def probe(self, job: Job) -> list[Diagnostic]:
        """Environment probes of this machine that compiling needs (``validate`` never runs
        them)."""
        ...

    def gaps(self) -> tuple[Gap, ...]:
        """Fields it does not honour (``targets.contract``)."""
        ...
