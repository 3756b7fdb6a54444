"""The example specs and the targets that apply to each (their checks report no errors)."""

from __future__ import annotations

from pathlib import Path

from ftspec.compiler.build import build_job
from ftspec.spec.ir import Job
from ftspec.spec.validate import validate_file
from ftspec.targets import TARGET_NAMES, get_target

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def available_targets() -> list[str]:
    import importlib.util

    return [n for n in TARGET_NAMES if importlib.util.find_spec(f"ftspec.targets.{n}")]


def example_job(path: Path) -> Job:
    result = validate_file(path)
    assert result.spec is not None, [d.format() for d in result.diagnostics.items]
    return build_job(result.spec, path)


def applicable(job: Job) -> list[str]:
    return [n for n in available_targets()
            if not any(d.is_error for d in get_target(n).check(job))]
