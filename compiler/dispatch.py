"""Target dispatch: a Job and a target name -> that target's artifacts."""

from __future__ import annotations

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job
from ftspec.spec.platforms import PLATFORMS
from ftspec.targets import get_target
from ftspec.targets.base import Artifact


def default_target(job: Job) -> str:
    """The compile target `apply` needs for ``deploy.target`` (``local`` runs the
    launcher's own artifacts)."""
    return PLATFORMS[job.target].compile_target or job.launcher


def check_job(job: Job, target: str) -> list[Diagnostic]:
    """The target's own checks plus its field contract (fields it does not honour)."""
    from ftspec.targets.contract import contract_findings

    return get_target(target).check(job) + contract_findings(job, target)


def compile_job(job: Job, target: str) -> list[Artifact]:
    return get_target(target).compile(job)
